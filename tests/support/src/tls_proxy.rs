//! HTTPS in front of a local server: a certificate authority made for the test, a certificate
//! for `localhost` and `127.0.0.1` that it signs, and a proxy that ends TLS and passes the
//! bytes on to the upstream server over plain TCP.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::server_thread::{ServerThread, accept_until};

/// A TLS-terminating proxy on an ephemeral port of `127.0.0.1`.
pub struct TlsProxy {
    _thread: ServerThread,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
    ca_file: PathBuf,
    counts: Arc<Counts>,
}

/// Connections accepted, and of them those whose handshake completed.
#[derive(Default)]
struct Counts {
    connections: AtomicUsize,
    handshakes: AtomicUsize,
}

impl TlsProxy {
    /// Starts a proxy in front of `upstream`, with a new certificate authority.
    pub fn start(upstream: SocketAddr) -> Self {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        // A name of its own: two proxies' authorities must not be taken for each other.
        static NEXT: AtomicUsize = AtomicUsize::new(1);
        ca.distinguished_name.push(
            rcgen::DnType::CommonName,
            format!(
                "rock-ci test CA {} {}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ),
        );
        let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().expect("server key");
        let mut server =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .expect("server params");
        server.use_authority_key_identifier_extension = true;
        server
            .extended_key_usages
            .push(rcgen::ExtendedKeyUsagePurpose::ServerAuth);
        let cert = server.signed_by(&key, &issuer).expect("server certificate");

        let dir = tempfile::tempdir().expect("temp dir");
        let ca_file = dir.path().join("ca.pem");
        fs_err::write(&ca_file, ca_cert.pem()).expect("write the CA");

        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .expect("server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("local addr");
        let counts = Arc::new(Counts::default());
        let thread = {
            let counts = counts.clone();
            ServerThread::spawn(2, move |stop| {
                accept_until(listener, stop, move |socket| {
                    let (acceptor, counts) = (acceptor.clone(), counts.clone());
                    async move {
                        counts.connections.fetch_add(1, Ordering::Relaxed);
                        let Ok(mut tls) = acceptor.accept(socket).await else {
                            return;
                        };
                        counts.handshakes.fetch_add(1, Ordering::Relaxed);
                        let Ok(mut plain) = tokio::net::TcpStream::connect(upstream).await else {
                            return;
                        };
                        let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                    }
                })
            })
        };
        Self {
            _thread: thread,
            addr,
            _dir: dir,
            ca_file,
            counts,
        }
    }

    /// `https://127.0.0.1:{port}` (the certificate names `127.0.0.1` and `localhost`; the
    /// address needs no name resolution).
    pub fn endpoint(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The PEM file of the certificate authority that signed the proxy's certificate (for
    /// `SSL_CERT_FILE`).
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.counts.connections.load(Ordering::Relaxed)
    }

    /// TLS handshakes completed so far.
    pub fn handshakes(&self) -> usize {
        self.counts.handshakes.load(Ordering::Relaxed)
    }
}
