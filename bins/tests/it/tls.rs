//! HTTPS endpoints: the S3 and GitHub clients trust the system's certificate authorities
//! (`SSL_CERT_FILE`), `AWS_CA_BUNDLE` instead for S3, and fail at once, saying what to do, on
//! a certificate they do not trust.

use crate::common::Launch as _;
use std::process::Command;

use rock_ci_test_support::{HttpServer, Reply, S3Server, TlsProxy, write_artifact};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

struct Https {
    s3: S3Server,
    s3_tls: TlsProxy,
    _github: HttpServer,
    github_tls: TlsProxy,
    work: tempfile::TempDir,
}

fn https() -> Https {
    let s3 = S3Server::start();
    s3.create_bucket("therock-ci-artifacts");
    let archive = s3
        .root()
        .join("therock-ci-artifacts/777-linux/blas_lib_generic.tar.zst");
    write_artifact(
        &archive,
        artifacts::Compression::Zstd { level: 3 },
        "math-libs/BLAS/stage",
        &[("lib/libblas.so", "blas over TLS")],
    );
    // Its sidecar, so that the fetch verifies it.
    let sha = rock_ci_test_support::sha256_hex(&fs_err::read(&archive).unwrap());
    fs_err::write(
        archive.with_extension("zst.sha256sum"),
        format!("{sha}  blas_lib_generic.tar.zst\n"),
    )
    .unwrap();
    let github = HttpServer::start(|_| {
        Reply::json(
            200,
            r#"{"id": 777, "head_repository": {"full_name": "ROCm/TheRock"}}"#,
        )
    });
    Https {
        s3_tls: TlsProxy::start(s3.addr()),
        github_tls: TlsProxy::start(github.addr()),
        s3,
        _github: github,
        work: tempfile::tempdir().unwrap(),
    }
}

impl Https {
    /// `fetch_artifacts` of run 777 through both proxies, trusting the PEM files `system`
    /// (as `SSL_CERT_FILE`) and, for S3, `bundle` (as `AWS_CA_BUNDLE`).
    fn fetch(&self, system: &[&std::path::Path], bundle: Option<&std::path::Path>) -> Command {
        let trusted = self.work.path().join("trusted.pem");
        let mut pem = String::new();
        for file in system {
            pem.push_str(&fs_err::read_to_string(file).unwrap());
        }
        fs_err::write(&trusted, pem).unwrap();
        let mut command = Command::new(crate::common::tool("fetch_artifacts"));
        command
            .args([
                "--run-id",
                "777",
                "--platform",
                "linux",
                "--output-dir",
                "out",
            ])
            .env_clear()
            .envs(self.s3.aws_env())
            .env("AWS_ENDPOINT_URL", self.s3_tls.endpoint())
            .env("GITHUB_API_URL", self.github_tls.endpoint())
            .env("SSL_CERT_FILE", &trusted)
            .env("ROCK_CI_MAX_ATTEMPTS", "3")
            .current_dir(self.work.path());
        if let Some(bundle) = bundle {
            command.env("AWS_CA_BUNDLE", bundle);
        }
        command
    }

    fn fetched(&self) -> Option<String> {
        fs_err::read_to_string(
            self.work
                .path()
                .join("out/blas_lib_generic/math-libs/BLAS/stage/lib/libblas.so"),
        )
        .ok()
    }
}

#[test]
fn system_store_and_ca_bundle_are_trusted() {
    let h = https();
    let out = h
        .fetch(&[h.s3_tls.ca_file(), h.github_tls.ca_file()], None)
        .run_output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(h.fetched().as_deref(), Some("blas over TLS"));
    assert!(h.s3_tls.handshakes() >= 1 && h.github_tls.handshakes() >= 1);

    // AWS_CA_BUNDLE stands for S3's authorities: the system store here knows only GitHub's.
    fs_err::remove_dir_all(h.work.path().join("out")).unwrap();
    let before = h.s3_tls.handshakes();
    let out = h
        .fetch(&[h.github_tls.ca_file()], Some(h.s3_tls.ca_file()))
        .run_output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(h.fetched().as_deref(), Some("blas over TLS"));
    assert!(h.s3_tls.handshakes() > before);

    // The selected profile's `ca_bundle` too, as boto3 reads it; AWS_CA_BUNDLE wins over it.
    let config = h.work.path().join("aws-config");
    fs_err::write(
        &config,
        format!(
            "[profile ci]\nca_bundle = {}\n",
            h.s3_tls.ca_file().display()
        ),
    )
    .unwrap();
    fs_err::remove_dir_all(h.work.path().join("out")).unwrap();
    let out = h
        .fetch(&[h.github_tls.ca_file()], None)
        .env("AWS_CONFIG_FILE", &config)
        .env("AWS_PROFILE", "ci")
        .run_output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(h.fetched().as_deref(), Some("blas over TLS"));
    fs_err::remove_dir_all(h.work.path().join("out")).unwrap();
    let out = h
        .fetch(&[h.github_tls.ca_file()], Some(h.github_tls.ca_file()))
        .env("AWS_CONFIG_FILE", &config)
        .env("AWS_PROFILE", "ci")
        .run_output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("certificate is not trusted"), "{stderr}");
}

#[test]
fn an_untrusted_certificate_fails_at_once_saying_what_to_set() {
    let h = https();
    // S3's authority is trusted nowhere: one connection, no retries, a message that says how
    // to trust it, nothing fetched.
    let out = h
        .fetch(&[h.github_tls.ca_file()], None)
        .run_output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("certificate is not trusted") && stderr.contains("AWS_CA_BUNDLE"),
        "{stderr}"
    );
    assert!(!stderr.contains("++ Retry"), "{stderr}");
    assert_eq!(h.s3_tls.connections(), 1, "{stderr}");
    assert_eq!(h.s3_tls.handshakes(), 0);
    assert_eq!(h.fetched(), None);

    // GitHub's authority untrusted: the run look-up fails at once on the certificate.
    let before = h.github_tls.connections();
    let out = h.fetch(&[h.s3_tls.ca_file()], None).run_output().unwrap();
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("is not trusted") && stderr.contains("SSL_CERT_FILE"),
        "{stderr}"
    );
    assert!(!stderr.contains("retrying"), "{stderr}");
    assert_eq!(h.github_tls.connections() - before, 1, "{stderr}");
    assert_eq!(h.fetched(), None);
}

#[test]
fn a_bad_ca_bundle_is_named() {
    let h = https();
    let all = [h.s3_tls.ca_file(), h.github_tls.ca_file()];
    let missing = h.work.path().join("no-such-bundle.pem");
    let not_pem = h.work.path().join("not-pem.txt");
    fs_err::write(&not_pem, "just text\n").unwrap();
    for bundle in [&missing, &not_pem] {
        let out = h.fetch(&all, Some(bundle)).run_output().unwrap();
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains("AWS_CA_BUNDLE") && stderr.contains(&*bundle.to_string_lossy()),
            "{stderr}"
        );
        assert_eq!(h.s3_tls.connections(), 0, "{stderr}");
        assert_eq!(h.fetched(), None);
    }
}
