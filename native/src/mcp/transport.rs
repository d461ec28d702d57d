//! stdio framing in front of rmcp: a line that is not JSON gets a -32700
//! reply and a JSON value that cannot be a JSON-RPC message gets -32600,
//! and serving goes on. Everything else passes through unchanged; every
//! line written to stdout is one whole JSON-RPC message.

use std::future::Future;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::mpsc;

fn error_line(code: i64, message: &str) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    })
    .to_string()
}

/// The transport to hand to rmcp, and the pump that must run beside it.
pub fn stdio() -> (
    (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>),
    impl Future<Output = ()> + Send + 'static,
) {
    io(tokio::io::stdin(), tokio::io::stdout())
}

/// The same over any reader and writer.
pub fn io<R, W>(
    input: R,
    mut output: W,
) -> (
    (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>),
    impl Future<Output = ()> + Send + 'static,
)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (server_side, ours) = tokio::io::duplex(1 << 20);
    let (our_read, mut our_write) = tokio::io::split(ours);
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let pump = async move {
        let errors = tx.clone();
        let inbound = async move {
            let mut lines = BufReader::new(input).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let t = line.trim();
                if t.is_empty() {
                    continue;
                }
                match serde_json::from_str::<serde_json::Value>(t) {
                    Err(e) => {
                        let _ = errors.send(error_line(-32700, &format!("Parse error: {e}")));
                    }
                    Ok(v) if !v.is_object() => {
                        let _ = errors.send(error_line(
                            -32600,
                            "Invalid Request: a JSON-RPC message must be an object",
                        ));
                    }
                    Ok(_) => {
                        if our_write.write_all(t.as_bytes()).await.is_err()
                            || our_write.write_all(b"\n").await.is_err()
                        {
                            break;
                        }
                    }
                }
            }
            let _ = our_write.shutdown().await;
        };
        let outbound = async move {
            let mut lines = BufReader::new(our_read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if tx.send(line).is_err() {
                    break;
                }
            }
        };
        let writer = async move {
            while let Some(line) = rx.recv().await {
                if output.write_all(line.as_bytes()).await.is_err()
                    || output.write_all(b"\n").await.is_err()
                    || output.flush().await.is_err()
                {
                    break;
                }
            }
        };
        tokio::join!(inbound, outbound, writer);
    };
    (tokio::io::split(server_side), pump)
}
