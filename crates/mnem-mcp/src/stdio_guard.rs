//! What stands between the process's stdin/stdout and the MCP SDK on the stdio transport.
//!
//! The SDK drops a line it cannot parse without a word, so a client that sent one waits
//! forever. JSON-RPC 2.0 wants an answer: here every line is read with a size bound and
//! looked at first — a line that is not UTF-8 or not JSON is answered −32700 (parse
//! error), one that is not a request object −32600, a line over [`MAX_LINE_BYTES`] −32600
//! naming the `id` it began with (when one can be read before `params`), and a
//! `tools/call` whose `arguments` is not an object −32602 (invalid params) — and only the
//! rest reach the SDK. The SDK's own output and these answers go to stdout through one
//! writer, a whole line at a time, so they never interleave.

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The longest message read whole (16 MiB); past it the line is answered and dropped.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// How much of an oversized line is kept to find its `id` in.
const ID_HINT_BYTES: usize = 4096;

/// What to do with one line of input.
#[derive(Debug, PartialEq)]
pub(crate) enum Screened {
    /// Hand it to the SDK.
    Forward,
    /// Answer it with this JSON-RPC error and drop it.
    Answer(Value),
    /// Nothing to do (a blank line).
    Skip,
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Looks at one complete line (`oversized`: only its first bytes were kept).
pub(crate) fn screen_line(line: &[u8], oversized: bool) -> Screened {
    if oversized {
        return Screened::Answer(error(
            id_hint(line),
            -32600,
            &format!("Invalid Request: the message is longer than {MAX_LINE_BYTES} bytes"),
        ));
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Screened::Answer(error(Value::Null, -32700, "Parse error: not UTF-8 text"));
    };
    if text.trim().is_empty() {
        return Screened::Skip;
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(err) => {
            return Screened::Answer(error(Value::Null, -32700, &format!("Parse error: {err}")))
        }
    };
    let Value::Object(message) = &value else {
        return Screened::Answer(error(
            Value::Null,
            -32600,
            "Invalid Request: a message is one JSON object",
        ));
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    if message.get("method").and_then(Value::as_str) == Some("tools/call") {
        let arguments = message.get("params").and_then(|p| p.get("arguments"));
        if arguments.is_some_and(|a| !a.is_object() && !a.is_null()) {
            return Screened::Answer(error(
                id,
                -32602,
                "Invalid params: `arguments` must be an object",
            ));
        }
    }
    Screened::Forward
}

/// The `id` an oversized message began with, when it comes before `params` (as clients
/// write it); otherwise null, as JSON-RPC says for an id that cannot be read.
fn id_hint(prefix: &[u8]) -> Value {
    let text = String::from_utf8_lossy(prefix);
    let before_params = text.split("\"params\"").next().unwrap_or("");
    let Some(at) = before_params.find("\"id\"") else {
        return Value::Null;
    };
    let rest = before_params[at + 4..].trim_start();
    let Some(rest) = rest.strip_prefix(':') else {
        return Value::Null;
    };
    // Read one JSON value (a number or a string) from the front of the rest.
    let mut stream = serde_json::Deserializer::from_str(rest.trim_start()).into_iter::<Value>();
    match stream.next() {
        Some(Ok(id @ (Value::Number(_) | Value::String(_)))) => id,
        _ => Value::Null,
    }
}

/// Reads one line (without its `\n`) into `line`, keeping at most [`MAX_LINE_BYTES`]
/// (past that only the first [`ID_HINT_BYTES`], and `true` is returned as `oversized`).
/// `None` at the end of input.
pub(crate) async fn read_bounded_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    line.clear();
    let mut oversized = false;
    let mut seen_any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(seen_any.then_some(oversized));
        }
        seen_any = true;
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(end) => (&available[..end], Some(end + 1)),
            None => (available, None),
        };
        if !oversized && line.len() + chunk.len() > MAX_LINE_BYTES {
            oversized = true;
            line.truncate(ID_HINT_BYTES);
        }
        if !oversized {
            line.extend_from_slice(chunk);
        } else if line.len() < ID_HINT_BYTES {
            let room = ID_HINT_BYTES - line.len();
            line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
        let used = done.unwrap_or(available.len());
        reader.consume(used);
        if done.is_some() {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(oversized));
        }
    }
}

/// Reads `input` line by line: forwards requests to `sdk` and sends answers to `out`.
pub(crate) async fn screen_input<R, W>(
    mut input: R,
    mut sdk: W,
    out: mpsc::Sender<Vec<u8>>,
) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut line = Vec::new();
    while let Some(oversized) = read_bounded_line(&mut input, &mut line).await? {
        match screen_line(&line, oversized) {
            Screened::Forward => {
                line.push(b'\n');
                sdk.write_all(&line).await?;
                sdk.flush().await?;
            }
            Screened::Answer(answer) => {
                let mut text = answer.to_string().into_bytes();
                text.push(b'\n');
                if out.send(text).await.is_err() {
                    break;
                }
            }
            Screened::Skip => {}
        }
    }
    sdk.shutdown().await
}

/// Copies the SDK's output to `out` a whole line at a time.
pub(crate) async fn relay_output<R: AsyncBufRead + Unpin>(
    mut sdk: R,
    out: mpsc::Sender<Vec<u8>>,
) -> std::io::Result<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        if sdk.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        if out.send(line.clone()).await.is_err() {
            return Ok(());
        }
    }
}

/// Writes what `lines` carries to `output`, flushing after each line.
pub(crate) async fn write_lines<W: AsyncWrite + Unpin>(
    mut lines: mpsc::Receiver<Vec<u8>>,
    mut output: W,
) -> std::io::Result<()> {
    while let Some(line) = lines.recv().await {
        output.write_all(&line).await?;
        output.flush().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(screened: Screened) -> (i64, Value) {
        match screened {
            Screened::Answer(answer) => (
                answer["error"]["code"].as_i64().unwrap(),
                answer["id"].clone(),
            ),
            other => panic!("want an answer, got {other:?}"),
        }
    }

    #[test]
    fn lines_that_cannot_be_read_are_answered_as_parse_errors() {
        assert_eq!(
            code(screen_line(b"{not json", false)),
            (-32700, Value::Null)
        );
        assert_eq!(code(screen_line(b"hello", false)), (-32700, Value::Null));
        assert_eq!(
            code(screen_line(b"{\"a\": \"\xff\"}", false)),
            (-32700, Value::Null)
        );
        assert_eq!(code(screen_line(b"[1, 2]", false)), (-32600, Value::Null));
        assert_eq!(screen_line(b"   ", false), Screened::Skip);
    }

    #[test]
    fn tool_arguments_that_are_not_an_object_are_invalid_params() {
        let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"recall_memory","arguments":[1,2]}}"#;
        assert_eq!(code(screen_line(call, false)), (-32602, json!(7)));
        let fine = br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"recall_memory","arguments":{"query":"x"}}}"#;
        assert_eq!(screen_line(fine, false), Screened::Forward);
    }

    #[test]
    fn an_oversized_message_is_answered_with_the_id_it_began_with() {
        let prefix = br#"{"jsonrpc":"2.0","id":"req-42","method":"tools/call","params":{"arguments":{"content":"xxxx"#;
        assert_eq!(code(screen_line(prefix, true)), (-32600, json!("req-42")));
        let nested = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"id":3"#;
        assert_eq!(code(screen_line(nested, true)), (-32600, Value::Null));
    }

    #[tokio::test]
    async fn a_line_past_the_bound_is_cut_and_the_next_line_is_read_whole() {
        let mut input = Vec::new();
        input.extend_from_slice(br#"{"id":5,"params":""#);
        input.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 10));
        input.extend_from_slice(b"\"}\n{\"id\":6}\r\n");
        let mut reader = tokio::io::BufReader::new(input.as_slice());
        let mut line = Vec::new();
        let first = read_bounded_line(&mut reader, &mut line).await.unwrap();
        assert_eq!(first, Some(true));
        assert!(line.len() <= ID_HINT_BYTES);
        assert_eq!(code(screen_line(&line, true)), (-32600, json!(5)));
        let second = read_bounded_line(&mut reader, &mut line).await.unwrap();
        assert_eq!(second, Some(false));
        assert_eq!(line, b"{\"id\":6}");
        assert_eq!(
            read_bounded_line(&mut reader, &mut line).await.unwrap(),
            None
        );
    }
}
