//! The tests' in-process S3 server as a program, for checks of installed tools (the Windows
//! wheel under Wine): serves `SOURCE_DIR`'s files as the objects below `BUCKET/PREFIX/`, without
//! authentication, beside a GitHub API stub that answers every workflow run as one of
//! `ROCm/TheRock`; prints `AWS_ENDPOINT_URL=…` and `GITHUB_API_URL=…` lines and serves until
//! its standard input closes.
//!
//!     s3_server SOURCE_DIR BUCKET PREFIX

use std::io::{Read as _, Write as _};
use std::process::ExitCode;

use rock_ci_test_support::{HttpServer, Reply, S3Server, S3ServerOptions};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [source, bucket, prefix] = args.as_slice() else {
        let _ = writeln!(
            std::io::stderr(),
            "usage: s3_server SOURCE_DIR BUCKET PREFIX"
        );
        return ExitCode::from(2);
    };
    let server = S3Server::start_with(S3ServerOptions {
        anonymous: true,
        ..S3ServerOptions::default()
    });
    server.create_bucket(bucket);
    let dest = server.root().join(bucket).join(prefix);
    if let Err(e) = file_tree::copy_tree(std::path::Path::new(source), &dest) {
        let _ = writeln!(std::io::stderr(), "error: {e}");
        return ExitCode::from(1);
    }
    let github = HttpServer::start(|request| {
        let id: u64 = request
            .path
            .rsplit('/')
            .next()
            .and_then(|id| id.parse().ok())
            .unwrap_or(0);
        Reply::json(
            200,
            &format!(r#"{{"id": {id}, "head_repository": {{"full_name": "ROCm/TheRock"}}}}"#),
        )
    });
    let _ = writeln!(
        std::io::stdout(),
        "AWS_ENDPOINT_URL={}\nGITHUB_API_URL={}",
        server.endpoint(),
        github.url()
    );
    let _ = std::io::stdout().flush();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    ExitCode::SUCCESS
}
