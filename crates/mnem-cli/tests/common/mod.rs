//! What the `mnem` binary's test files share: a store file per test, and running the
//! binary on it.

#![allow(dead_code)] // not every test binary uses every helper

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub struct Store {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl Store {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mnem.db");
        Self { _dir: dir, path }
    }

    pub fn run(&self, args: &[&str]) -> Output {
        mnem(Some(&self.path), args)
    }

    /// Runs a command that must succeed and returns its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "mnem {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 stdout")
    }

    pub fn json(&self, args: &[&str]) -> Value {
        let mut with_json = vec!["--json"];
        with_json.extend_from_slice(args);
        serde_json::from_str(&self.ok(&with_json)).expect("json stdout")
    }

    pub fn listing_len(&self) -> usize {
        self.json(&["recall", "--limit", "50"])["results"]
            .as_array()
            .expect("results")
            .len()
    }
}

/// A local stand-in for an OpenAI-compatible chat endpoint (a remote LLM cannot exist
/// here): answers one request with a hypothesis reading of `statement`, plausibility 0.7.
pub fn stand_in_chat_model(statement: &str) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let content = serde_json::json!({"statement": statement, "plausibility": 0.7}).to_string();
    let body = serde_json::json!({"choices": [{"message": {"content": content}}]}).to_string();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut reader = BufReader::new(stream.try_clone().expect("stream"));
        let mut length = 0;
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
            if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = n.trim().parse().unwrap_or(0);
            }
            line.clear();
        }
        let mut request = vec![0; length];
        let _ = reader.read_exact(&mut request);
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
    });
    url
}

pub fn mnem(db: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mnem"));
    cmd.env_remove("MNEM_DB").env_remove("MNEM_TEAM");
    if let Some(db) = db {
        cmd.arg("--db").arg(db);
    }
    cmd.args(args).output().expect("run mnem")
}
