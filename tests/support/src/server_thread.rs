//! The thread a local server runs on, with its own tokio runtime.

use std::future::Future;

use tokio::sync::oneshot;

/// Accepts connections on `listener` until `stop` completes, each served by a task running
/// `serve`.
pub(crate) async fn accept_until<F>(
    listener: std::net::TcpListener,
    mut stop: oneshot::Receiver<()>,
    serve: impl Fn(tokio::net::TcpStream) -> F,
) where
    F: Future<Output = ()> + Send + 'static,
{
    let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
    loop {
        let socket = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                Err(_) => continue,
            },
            _ = &mut stop => break,
        };
        tokio::spawn(serve(socket));
    }
}

/// A server's thread; stopping it (on drop) ends the server's future, then its runtime, its
/// listener and every open connection.
pub(crate) struct ServerThread {
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerThread {
    /// Runs `serve` on a new thread, in a runtime of `workers` threads; the receiver it gets
    /// completes when the server is to stop.
    pub(crate) fn spawn<F>(
        workers: usize,
        serve: impl FnOnce(oneshot::Receiver<()>) -> F + Send + 'static,
    ) -> Self
    where
        F: Future<Output = ()>,
    {
        let (shutdown, stop) = oneshot::channel();
        let thread = std::thread::spawn(move || {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(serve(stop));
        });
        Self {
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
