//! Loopback networking shared by the MCP server and the LLM gateway: per-trial tokens and a
//! small axum server bound to loopback.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};

use axum::serve::ListenerExt;
use tokio_util::sync::CancellationToken;

/// A fresh random token (128 bits from the process's randomly keyed hasher).
pub fn new_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let mut out = String::new();
    for _ in 0..2 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out
}

/// Serves `router` on `addr` (TCP_NODELAY) until `cancel` fires: the bound address and the task.
pub async fn spawn_loopback(
    addr: SocketAddr,
    router: axum::Router,
    cancel: CancellationToken,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        // No Nagle: small JSON-RPC answers must not wait for a delayed ACK (40 ms each).
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { cancel.cancelled().await })
            .await;
    });
    Ok((addr, task))
}
