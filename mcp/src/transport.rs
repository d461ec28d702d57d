//! Newline-delimited JSON-RPC over a reader and a writer (stdio), in front
//! of rmcp: each line is decided by [`super::framing`], so a line that is
//! not a valid message is answered at once and serving goes on. A line
//! longer than the limit is never held whole: past the limit its bytes are
//! only scanned for the id, then dropped. Every line written is one whole
//! JSON-RPC message. The end of the input reaches rmcp only once every
//! request read has been answered (or cancelled by the client): rmcp stops
//! answering when its input ends, and a client that writes its requests
//! and closes its end is owed every answer.

use super::framing::{self, Inbound, MAX_MESSAGE_BYTES};
use super::scan::Scan;
use futures::channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use futures::StreamExt;
use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::RoleServer;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Messages from the client, for rmcp.
pub type Incoming = UnboundedReceiver<RxJsonRpcMessage<RoleServer>>;
/// Messages to the client, from rmcp.
pub type Outgoing = UnboundedSender<TxJsonRpcMessage<RoleServer>>;

/// One line read from the client.
enum Line {
    /// A whole line (without its end), at most the limit.
    Whole(Vec<u8>),
    /// A line over the limit: its size and the id found in it.
    Oversize(u64, Option<serde_json::Value>),
}

/// Reads the next line, holding at most the limit of it in memory.
async fn next_line<R: AsyncBufRead + Unpin>(r: &mut R) -> std::io::Result<Option<Line>> {
    let mut buf: Vec<u8> = vec![];
    let mut over: Option<(Scan, u64)> = None;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            // End of input: a last line without its newline still counts.
            return Ok(match over {
                Some((s, n)) => Some(Line::Oversize(n, s.id())),
                None if buf.is_empty() => None,
                None => Some(Line::Whole(buf)),
            });
        }
        let (part, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], i + 1),
            None => (chunk, chunk.len()),
        };
        let ended = done > part.len();
        match &mut over {
            Some((s, n)) => {
                s.feed(part);
                *n += part.len() as u64;
            }
            None if buf.len() + part.len() > MAX_MESSAGE_BYTES => {
                let mut s = Scan::new();
                s.feed(&buf);
                s.feed(part);
                over = Some((s, (buf.len() + part.len()) as u64));
                buf = vec![];
            }
            None => buf.extend_from_slice(part),
        }
        r.consume(done);
        if ended {
            return Ok(Some(match over {
                Some((s, n)) => Line::Oversize(n, s.id()),
                None => Line::Whole(buf),
            }));
        }
    }
}

/// How long the end of the input waits for the answers still owed.
const DRAIN_LIMIT: Duration = Duration::from_secs(60);

/// Requests read and not answered yet, by id (a client may reuse one).
#[derive(Default)]
struct Pending {
    ids: Mutex<HashMap<RequestId, u32>>,
    settled: tokio::sync::Notify,
}

impl Pending {
    fn ids(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, u32>> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request came in.
    fn asked(&self, id: &RequestId) {
        *self.ids().entry(id.clone()).or_insert(0) += 1;
    }

    /// A request was answered (or cancelled).
    fn done(&self, id: &RequestId) {
        let mut ids = self.ids();
        if let Some(n) = ids.get_mut(id) {
            *n -= 1;
            if *n == 0 {
                ids.remove(id);
            }
        }
        if ids.is_empty() {
            self.settled.notify_waiters();
        }
    }

    /// Returns once no request is waiting for its answer.
    async fn settled(&self) {
        loop {
            let settled = self.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            if self.ids().is_empty() {
                return;
            }
            settled.await;
        }
    }

    /// Notes what a message from the client asks or withdraws.
    fn inbound(&self, m: &RxJsonRpcMessage<RoleServer>) {
        match m {
            JsonRpcMessage::Request(r) => self.asked(&r.id),
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification {
                    if let Some(id) = &c.params.request_id {
                        self.done(id);
                    }
                }
            }
            _ => {}
        }
    }

    /// Notes what a message to the client answers.
    fn outbound(&self, m: &TxJsonRpcMessage<RoleServer>) {
        match m {
            JsonRpcMessage::Response(r) => self.done(&r.id),
            JsonRpcMessage::Error(e) => {
                if let Some(id) = &e.id {
                    self.done(id);
                }
            }
            _ => {}
        }
    }
}

/// The transport to hand to rmcp (`(sink, stream)` after mapping the
/// sink's error), and the pump that must run beside it.
pub fn stdio() -> (
    (Outgoing, Incoming),
    impl Future<Output = ()> + Send + 'static,
) {
    io(tokio::io::stdin(), tokio::io::stdout())
}

/// The same over any reader and writer.
pub fn io<R, W>(
    input: R,
    mut output: W,
) -> (
    (Outgoing, Incoming),
    impl Future<Output = ()> + Send + 'static,
)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (in_tx, in_rx) = unbounded::<RxJsonRpcMessage<RoleServer>>();
    let (out_tx, mut out_rx) = unbounded::<TxJsonRpcMessage<RoleServer>>();
    let (line_tx, mut line_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let pending = Arc::new(Pending::default());
    let answered = pending.clone();
    let pump = async move {
        let replies = line_tx.clone();
        let inbound = async move {
            let mut reader = BufReader::with_capacity(1 << 16, input);
            loop {
                let line = match next_line(&mut reader).await {
                    Ok(Some(l)) => l,
                    Ok(None) | Err(_) => break,
                };
                let decided = match line {
                    Line::Oversize(n, id) => Inbound::Reply(framing::oversize_reply(id, n)),
                    Line::Whole(b) if b.trim_ascii().is_empty() => continue,
                    Line::Whole(b) => framing::decode(&b),
                };
                match decided {
                    Inbound::Message(m) => {
                        pending.inbound(&m);
                        if in_tx.unbounded_send(*m).is_err() {
                            break;
                        }
                    }
                    Inbound::Reply(v) => {
                        let _ = replies.send(v.to_string());
                    }
                    Inbound::Ignore => {}
                }
            }
            let _ = tokio::time::timeout(DRAIN_LIMIT, pending.settled()).await;
            in_tx.close_channel();
        };
        let outbound = async move {
            while let Some(m) = out_rx.next().await {
                answered.outbound(&m);
                let text = match serde_json::to_string(&m) {
                    Ok(t) => t,
                    Err(e) => framing::error_reply(
                        None,
                        -32603,
                        &format!("Internal error: cannot encode a response ({e})"),
                    )
                    .to_string(),
                };
                if line_tx.send(text).is_err() {
                    break;
                }
            }
        };
        let writer = async move {
            while let Some(mut line) = line_rx.recv().await {
                // One write per message: on stdout each write is a trip to
                // tokio's blocking pool.
                line.push('\n');
                if output.write_all(line.as_bytes()).await.is_err() || output.flush().await.is_err()
                {
                    break;
                }
            }
        };
        tokio::join!(inbound, outbound, writer);
    };
    ((out_tx, in_rx), pump)
}
