//! The sockets under [`super::Remote`]'s ureq agent, through ureq's
//! `unversioned` API (outside its semver promise, hence the `~3.5` pin): a
//! [`Lookup`] that resolves TCP hosts and does no lookup for a unix socket,
//! a [`Dial`] connector that opens the socket, and the transport over it.
//! TLS is added after [`Dial`] by ureq's own rustls connector.

use super::Target;
use std::fmt;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, LazyBuffers, NextTimeout, Transport,
};

/// A socket that could not be opened (or a name that did not resolve):
/// the daemon is not there.
#[derive(Debug)]
pub(super) struct Unreachable(pub(super) std::io::Error);

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Unreachable {}

fn unreachable(e: std::io::Error) -> ureq::Error {
    ureq::Error::Other(Box::new(Unreachable(e)))
}

/// Resolves the target's host for ureq; a unix socket needs no lookup,
/// and its one placeholder address is never dialled.
#[derive(Debug)]
pub(super) struct Lookup {
    pub(super) target: Target,
}

impl Resolver for Lookup {
    fn resolve(
        &self,
        _uri: &ureq::http::Uri,
        _config: &ureq::config::Config,
        _timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let mut out = self.empty();
        match &self.target {
            Target::Unix(_) => out.push(SocketAddr::from(([127, 0, 0, 1], 0))),
            Target::Tcp { host, port, .. } => {
                let found = (host.as_str(), *port)
                    .to_socket_addrs()
                    .map_err(unreachable)?;
                for a in found {
                    if out.try_push(a).is_err() {
                        break;
                    }
                }
            }
        }
        if out.is_empty() {
            return Err(unreachable(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the name has no address",
            )));
        }
        Ok(out)
    }
}

/// Opens the target's socket: the unix socket, or TCP to the resolved
/// addresses (TLS is added by the next connector in the chain).
#[derive(Debug)]
pub(super) struct Dial {
    pub(super) target: Target,
}

impl Connector for Dial {
    type Out = SocketTransport;

    fn connect(
        &self,
        details: &ConnectionDetails,
        _chained: Option<()>,
    ) -> Result<Option<SocketTransport>, ureq::Error> {
        let socket = match &self.target {
            #[cfg(unix)]
            Target::Unix(p) => {
                Socket::Unix(std::os::unix::net::UnixStream::connect(p).map_err(unreachable)?)
            }
            #[cfg(not(unix))]
            Target::Unix(_) => {
                return Err(unreachable(std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "unix sockets are not available here",
                )))
            }
            Target::Tcp { .. } => {
                let s = TcpStream::connect(&details.addrs[..]).map_err(unreachable)?;
                let _ = s.set_nodelay(details.config.no_delay());
                Socket::Tcp(s)
            }
        };
        let buffers = LazyBuffers::new(
            details.config.input_buffer_size(),
            details.config.output_buffer_size(),
        );
        Ok(Some(SocketTransport {
            socket,
            buffers,
            read_timeout: None,
            write_timeout: None,
        }))
    }
}

/// A connected stream socket.
#[derive(Debug)]
pub(super) enum Socket {
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixStream),
    Tcp(TcpStream),
}

impl Socket {
    fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            #[cfg(unix)]
            Socket::Unix(s) => s.set_read_timeout(t),
            Socket::Tcp(s) => s.set_read_timeout(t),
        }
    }

    fn set_write_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            #[cfg(unix)]
            Socket::Unix(s) => s.set_write_timeout(t),
            Socket::Tcp(s) => s.set_write_timeout(t),
        }
    }

    fn set_nonblocking(&self, on: bool) -> std::io::Result<()> {
        match self {
            #[cfg(unix)]
            Socket::Unix(s) => s.set_nonblocking(on),
            Socket::Tcp(s) => s.set_nonblocking(on),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            #[cfg(unix)]
            Socket::Unix(s) => s.read(buf),
            Socket::Tcp(s) => s.read(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            #[cfg(unix)]
            Socket::Unix(s) => s.write_all(buf),
            Socket::Tcp(s) => s.write_all(buf),
        }
    }
}

/// ureq's transport over a [`Socket`].
pub(super) struct SocketTransport {
    socket: Socket,
    buffers: LazyBuffers,
    /// The timeouts last set on the socket, so each is set only on change.
    read_timeout: Option<Option<Duration>>,
    write_timeout: Option<Option<Duration>>,
}

impl fmt::Debug for SocketTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SocketTransport")
            .field("socket", &self.socket)
            .finish()
    }
}

/// The time left for one read or write (`None`: no limit); an expired
/// budget is ureq's timeout error.
fn time_left(t: NextTimeout) -> Result<Option<Duration>, ureq::Error> {
    if !t.after.is_not_happening() && *t.after == Duration::ZERO {
        return Err(ureq::Error::Timeout(t.reason));
    }
    Ok(t.not_zero().map(|d| *d))
}

/// An I/O error as ureq's: a timed-out socket is its timeout.
fn io_error(e: std::io::Error, t: NextTimeout) -> ureq::Error {
    match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
            ureq::Error::Timeout(t.reason)
        }
        _ => ureq::Error::Io(e),
    }
}

impl Transport for SocketTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let t = timeout.for_write();
        let left = time_left(t)?;
        if self.write_timeout != Some(left) {
            self.socket.set_write_timeout(left)?;
            self.write_timeout = Some(left);
        }
        let out = &self.buffers.output()[..amount];
        self.socket.write_all(out).map_err(|e| io_error(e, t))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let t = timeout.for_read();
        let left = time_left(t)?;
        if self.read_timeout != Some(left) {
            self.socket.set_read_timeout(left)?;
            self.read_timeout = Some(left);
        }
        let buf = self.buffers.input_append_buf();
        let n = loop {
            match self.socket.read(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => break r.map_err(|e| io_error(e, t))?,
            }
        };
        self.buffers.input_appended(n);
        Ok(n > 0)
    }

    /// Open while nothing is waiting to be read: a closed socket reads
    /// its end at once, and bytes nobody asked for mean it is unusable.
    fn is_open(&mut self) -> bool {
        if self.socket.set_nonblocking(true).is_err() {
            return false;
        }
        let mut probe = [0u8; 1];
        let idle = matches!(
            self.socket.read(&mut probe),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
        );
        idle && self.socket.set_nonblocking(false).is_ok()
    }
}
