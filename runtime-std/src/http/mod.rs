//! The HTTP transports on std: streamable HTTP (`POST /mcp`) and the legacy HTTP+SSE transport
//! (`GET /sse`, `POST /messages?stream=…`) on one port, served by a minimal blocking HTTP/1.1
//! server — `std::net::TcpListener`, a bounded pool of worker threads, keep-alive, read
//! timeouts and a connection cap ([`server`]).

pub mod server;

pub use server::{HttpServerHandle, bind, serve_http};
