//! The GitHub client blocks its thread (its requests, and its waits for a rate limit to
//! reset); the finder must call it off the async threads. On a current-thread runtime (as the
//! tools run it), another task has to make progress while a look-up waits for a rate limit:
//! the API answers the retried request only once that task has run.

extern crate rock_ci_run_finder as run_finder;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use rock_ci_test_support::{HttpServer, Reply};
use run_finder::{Finder, Query};

#[test]
fn other_tasks_run_while_a_look_up_waits_for_a_rate_limit() {
    let work = tempfile::tempdir().unwrap();
    fs_err::create_dir_all(work.path().join("cmake")).unwrap();
    fs_err::write(
        work.path().join(run_finder::AMDGPU_TARGETS_CMAKE),
        "therock_add_amdgpu_target(gfx942 \"MI300\" FAMILY gfx94X-dcgpu)\n",
    )
    .unwrap();

    let rate_limited = Arc::new(tokio::sync::Notify::new());
    let (ran_tx, ran_rx) = mpsc::channel::<()>();
    let server = {
        let rate_limited = rate_limited.clone();
        let ran_rx = Mutex::new(ran_rx);
        let served = AtomicUsize::new(0);
        HttpServer::start(move |_| {
            if served.fetch_add(1, Ordering::SeqCst) == 0 {
                rate_limited.notify_one();
                return Reply::json(429, r#"{"message": "API rate limit exceeded"}"#)
                    .with_header("retry-after", "1");
            }
            // Only a bound against hanging: with a blocked runtime the other task cannot run
            // before this look-up returns, however long this waits.
            match ran_rx.lock().unwrap().recv_timeout(Duration::from_secs(30)) {
                Ok(()) => Reply::json(200, r#"{"total_count": 0, "workflow_runs": []}"#),
                Err(_) => Reply::json(404, r#"{"message": "the runtime was blocked"}"#),
            }
        })
    };
    let url = server.url();
    let lookup = move |var: &str| match var {
        "GITHUB_API_URL" => Some(url.clone()),
        "GITHUB_TOKEN" => Some("t0k".to_owned()),
        _ => None,
    };
    let mut query = Query::new(
        "ROCm/TheRock".parse().unwrap(),
        "multi_arch_ci.yml",
        workflow_outputs::Platform::Linux,
    );
    query.artifact_groups = vec!["gfx94X-dcgpu".to_owned()];
    query.therock_dir = Some(work.path().to_path_buf());

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (found, ()) = runtime.block_on(async {
        let search = async {
            let mut finder = Finder::new(query, &lookup).await?;
            finder.for_commit("abc", &mut std::io::sink()).await
        };
        let other = async {
            rate_limited.notified().await;
            ran_tx.send(()).unwrap();
        };
        tokio::join!(search, other)
    });
    let found = found.unwrap_or_else(|e| panic!("{e}"));
    assert!(found.is_empty());
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths.len(), 2, "{paths:?}");
    assert!(
        paths[1].starts_with(
            "/repos/ROCm/TheRock/actions/workflows/multi_arch_ci.yml/runs?head_sha=abc"
        ),
        "{paths:?}"
    );
}
