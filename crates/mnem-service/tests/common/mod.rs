//! Set-up shared by the service's test binaries.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use mnem_core::{Actor, ManualClock, NewEvidence, Timestamp};
use mnem_sqlite::SqliteStore;
use mnem_store::EvidenceStore;

pub fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        Timestamp::from_seconds(1_700_000_000),
        1_000,
    ))
}

#[allow(dead_code)] // not every test binary uses it
/// An in-memory store holding one note ("the backup job runs nightly") in team `t`.
pub async fn store_with_note() -> (SqliteStore, Actor) {
    let store = SqliteStore::open_in_memory(clock()).unwrap();
    let actor = store.open_team("t").await.unwrap();
    store
        .remember(&actor, NewEvidence::new("the backup job runs nightly"))
        .await
        .unwrap();
    (store, actor)
}

/// A local stand-in for a remote JSON API (the one thing that cannot exist here): answers
/// every request with `response` and keeps the request bodies it received.
#[allow(dead_code)] // not every test binary uses it
pub fn stand_in_endpoint(response: String) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let received = Arc::clone(&bodies);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let body = read_request_body(&stream);
            received.lock().unwrap().push(body);
            respond_json(&mut stream, &response);
        }
    });
    (url, bodies)
}

/// The body of one HTTP/1.1 request (read by its `Content-Length`).
#[allow(dead_code)]
pub fn read_request_body(stream: &TcpStream) -> String {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    String::from_utf8(body).unwrap()
}

/// Answers with `200 OK` and a JSON body, then closes.
#[allow(dead_code)]
pub fn respond_json(stream: &mut TcpStream, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        body.len(),
        body
    );
}
