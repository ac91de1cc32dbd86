use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use github_actions::{ApiError, GithubClient, RetryPolicy};
use rock_ci_test_support::{HttpServer, Reply};

use crate::env;

const RUN: &str = r#"{"id": 12345, "head_repository": {"full_name": "SomeUser/TheRock"},
  "head_sha": "abc", "status": "completed", "conclusion": "success",
  "html_url": "https://github.com/ROCm/TheRock/actions/runs/12345", "created_at": "2026-01-01T00:00:00Z"}"#;

fn fast() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        max_rate_limit_wait: Duration::from_secs(5),
        ..RetryPolicy::default()
    }
}

/// A server answering with `replies` in order (the last one repeats).
fn scripted(replies: Vec<Reply>) -> HttpServer {
    let n = Arc::new(AtomicUsize::new(0));
    HttpServer::start(move |_| {
        let i = n.fetch_add(1, Ordering::SeqCst);
        replies[i.min(replies.len() - 1)].clone()
    })
}

fn client(server: &HttpServer) -> GithubClient {
    GithubClient::from_lookup(&env(&[
        ("GITHUB_API_URL", &server.url()),
        ("GITHUB_TOKEN", "t0k"),
    ]))
    .unwrap()
    .with_retry_policy(fast())
}

#[test]
fn success_sends_headers_and_parses_the_run() {
    let server = scripted(vec![Reply::json(200, RUN)]);
    let run = client(&server)
        .workflow_run("ROCm/TheRock", "12345")
        .unwrap();
    assert_eq!(run.id, 12345);
    assert_eq!(run.head_repository_full_name(), Some("SomeUser/TheRock"));
    assert_eq!(run.head_sha.as_deref(), Some("abc"));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let req = &requests[0];
    assert_eq!(req.method, "GET");
    assert_eq!(req.path, "/repos/ROCm/TheRock/actions/runs/12345");
    assert_eq!(req.header("authorization"), Some("Bearer t0k"));
    assert_eq!(req.header("accept"), Some("application/vnd.github+json"));
    assert_eq!(req.header("x-github-api-version"), Some("2022-11-28"));
}

#[test]
fn deleted_fork_has_no_head_repository() {
    let server = scripted(vec![Reply::json(
        200,
        r#"{"id": 7, "head_repository": null}"#,
    )]);
    let run = client(&server).workflow_run("ROCm/TheRock", "7").unwrap();
    assert_eq!(run.head_repository_full_name(), None);
}

#[test]
fn not_found_names_the_run_url_and_the_hint() {
    let server = scripted(vec![Reply::json(404, r#"{"message": "Not Found"}"#)]);
    let client = client(&server).with_server_url("https://github.example.com/");
    let err = client.workflow_run("ROCm/TheRock", "999").unwrap_err();
    let text = err.to_string();
    assert_eq!(
        text,
        format!(
            "Failed to query workflow run 999 in repository ROCm/TheRock: https://github.example.com/ROCm/TheRock/actions/runs/999\n  Resource not found (404) for {}/repos/ROCm/TheRock/actions/runs/999. Verify the repository, workflow, or run ID exists\nHint: Did you mean to specify a different repository with --run-github-repo?",
            server.url()
        )
    );
    // 404 is not retried.
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn server_errors_are_retried_then_succeed() {
    let server = scripted(vec![
        Reply::json(502, "bad gateway"),
        Reply::json(503, "unavailable"),
        Reply::Close,
        Reply::json(200, RUN),
    ]);
    let run = client(&server)
        .workflow_run("ROCm/TheRock", "12345")
        .unwrap();
    assert_eq!(run.id, 12345);
    assert_eq!(server.requests().len(), 4);
}

#[test]
fn server_errors_give_up_after_max_attempts() {
    let server = scripted(vec![Reply::json(500, "boom")]);
    let err = client(&server)
        .get_json::<serde_json::Value>(&format!("{}/x", server.url()))
        .unwrap_err();
    assert!(
        matches!(
            err,
            ApiError::Http {
                status: 500,
                attempts: 4,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("HTTP 500 error for "), "{err}");
    assert_eq!(server.requests().len(), 4);
}

#[test]
fn rate_limit_waits_for_reset_then_retries() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let limited = Reply::json(403, r#"{"message": "API rate limit exceeded"}"#)
        .with_header("x-ratelimit-remaining", "0")
        .with_header("x-ratelimit-reset", &now.to_string());
    let server = scripted(vec![limited, Reply::json(200, RUN)]);
    let start = Instant::now();
    let run = client(&server)
        .workflow_run("ROCm/TheRock", "12345")
        .unwrap();
    assert_eq!(run.id, 12345);
    assert_eq!(server.requests().len(), 2);
    // It waited for the reset (now + 1 s margin), not the 10 ms backoff.
    assert!(
        start.elapsed() >= Duration::from_millis(900),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn secondary_rate_limit_honours_retry_after() {
    let limited =
        Reply::json(429, r#"{"message": "secondary rate limit"}"#).with_header("retry-after", "0");
    let server = scripted(vec![limited.clone(), limited, Reply::json(200, RUN)]);
    client(&server)
        .workflow_run("ROCm/TheRock", "12345")
        .unwrap();
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn rate_limit_too_far_away_fails_at_once() {
    let limited = Reply::json(403, r#"{"message": "API rate limit exceeded"}"#)
        .with_header("x-ratelimit-remaining", "0")
        .with_header("retry-after", "3600");
    let server = scripted(vec![limited]);
    let err = client(&server)
        .workflow_run("ROCm/TheRock", "1")
        .unwrap_err();
    let ApiError::WorkflowRun { source, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(
        matches!(**source, ApiError::RateLimited { .. }),
        "{source:?}"
    );
    assert!(err.to_string().contains("set GITHUB_TOKEN"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn forbidden_without_rate_limit_is_not_retried() {
    let server = scripted(vec![Reply::json(
        403,
        r#"{"message": "Resource not accessible"}"#,
    )]);
    let err = client(&server)
        .get_json::<serde_json::Value>(&format!("{}/x", server.url()))
        .unwrap_err();
    assert!(
        matches!(err, ApiError::Forbidden { status: 403, .. }),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn malformed_json_is_a_clear_error() {
    let server = scripted(vec![Reply::json(200, r#"{"id": 1, "#)]);
    let url = format!("{}/repos/ROCm/TheRock/actions/runs/1", server.url());
    let err = client(&server)
        .workflow_run("ROCm/TheRock", "1")
        .unwrap_err();
    let ApiError::WorkflowRun { source, .. } = &err else {
        panic!("{err:?}")
    };
    let ApiError::InvalidJson {
        url: bad_url,
        source,
    } = &**source
    else {
        panic!("{source:?}")
    };
    assert_eq!(bad_url, &url);
    assert!(source.to_string().contains("EOF"), "{source}");
    assert!(
        err.to_string()
            .contains(&format!("Invalid JSON response from {url}")),
        "{err}"
    );
}

#[test]
fn connection_refused_is_a_network_error_after_retries() {
    let server = scripted(vec![Reply::json(200, RUN)]);
    let url = server.url();
    drop(server);
    let client = GithubClient::new(&url).with_retry_policy(fast());
    let err = client
        .get_json::<serde_json::Value>(&format!("{url}/x"))
        .unwrap_err();
    assert!(
        matches!(err, ApiError::Network { attempts: 4, .. }),
        "{err:?}"
    );
}

#[test]
fn runs_for_commit_are_sorted_newest_first() {
    let body = r#"{"total_count": 2, "workflow_runs": [
        {"id": 1, "created_at": "2026-01-01T00:00:00Z"},
        {"id": 2, "created_at": "2026-01-02T00:00:00Z"}]}"#;
    let server = scripted(vec![Reply::json(200, body)]);
    let runs = client(&server)
        .workflow_runs_for_commit("ROCm/TheRock", "ci.yml", "abc")
        .unwrap();
    assert_eq!(runs.iter().map(|r| r.id).collect::<Vec<_>>(), [2, 1]);
    assert_eq!(
        server.requests()[0].path,
        "/repos/ROCm/TheRock/actions/workflows/ci.yml/runs?head_sha=abc&sort=created&direction=desc"
    );
}

/// A URL variable that does not parse, or a run id that is not a number, is refused before any
/// request is made.
#[test]
fn malformed_urls_and_run_ids_are_refused_before_any_request() {
    for (var, value) in [
        ("GITHUB_API_URL", "not-a-url"),
        ("GITHUB_API_URL", "ftp://example.com"),
        ("GITHUB_SERVER_URL", "github.com"),
    ] {
        let err = GithubClient::from_lookup(&env(&[(var, value)])).unwrap_err();
        assert!(err.is_usage(), "{err}");
        assert!(err.to_string().contains(var), "{err}");
    }
    let err = GithubClient::from_lookup(&env(&[("GITHUB_API_URL", "user:pw@host")])).unwrap_err();
    assert!(!err.to_string().contains("pw"), "{err}");

    let server = scripted(vec![Reply::json(200, RUN)]);
    let c = client(&server);
    for bad in ["1/../2", "", "12a", " 12", "-1"] {
        let err = c.workflow_run("ROCm/TheRock", bad).unwrap_err();
        assert!(err.is_usage(), "{bad:?}: {err}");
    }
    assert!(server.requests().is_empty(), "no request was sent");
    c.workflow_run("ROCm/TheRock", "12345").unwrap();
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn env_configuration() {
    let c = GithubClient::from_lookup(&env(&[])).unwrap();
    assert_eq!(c.api_url(), "https://api.github.com");
    assert_eq!(
        c.run_url("a/b", "1"),
        "https://github.com/a/b/actions/runs/1"
    );
    let c = GithubClient::from_lookup(&env(&[
        ("GITHUB_API_URL", "https://ghe.example.com/api/v3/"),
        ("GITHUB_SERVER_URL", "https://ghe.example.com"),
    ]))
    .unwrap();
    assert_eq!(c.api_url(), "https://ghe.example.com/api/v3");
    assert_eq!(
        c.run_url("a/b", "1"),
        "https://ghe.example.com/a/b/actions/runs/1"
    );
}

#[test]
fn gh_token_is_used_when_github_token_is_unset() {
    let server = scripted(vec![Reply::json(200, RUN)]);
    let c = GithubClient::from_lookup(&env(&[
        ("GITHUB_API_URL", &server.url()),
        ("GH_TOKEN", "gh"),
    ]))
    .unwrap();
    c.workflow_run("ROCm/TheRock", "12345").unwrap();
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer gh")
    );
    let server = scripted(vec![Reply::json(200, RUN)]);
    let c = GithubClient::from_lookup(&env(&[("GITHUB_API_URL", &server.url())])).unwrap();
    c.workflow_run("ROCm/TheRock", "12345").unwrap();
    assert_eq!(server.requests()[0].header("authorization"), None);
}

/// An endpoint that accepts connections and never answers: the look-up fails within the
/// policy's limits, naming the endpoint without the credentials in its URL.
#[test]
fn a_silent_endpoint_fails_within_the_limits() {
    let addr = rock_ci_test_support::black_hole();
    let client = GithubClient::from_lookup(&env(&[
        ("GITHUB_API_URL", &format!("http://user:s3cret@{addr}")),
        ("GITHUB_TOKEN", "t0k"),
    ]))
    .unwrap()
    .with_retry_policy(RetryPolicy {
        read_timeout: Duration::from_millis(300),
        attempt_timeout: Duration::from_secs(1),
        give_up_after: Duration::from_secs(1),
        ..fast()
    });
    let start = Instant::now();
    let err = client.workflow_run("ROCm/TheRock", "1").unwrap_err();
    let elapsed = start.elapsed();
    let text = format!("{:#}", anyhow_like(&err));
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert!(text.contains(&format!("http://***@{addr}/")), "{text}");
    assert!(!text.contains("s3cret"), "{text}");
    assert!(text.to_lowercase().contains("timed out"), "{text}");
}

/// The error and its causes, joined.
fn anyhow_like(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[test]
fn credentials_in_urls_are_redacted() {
    for (url, shown) in [
        (
            "https://user:pass@api.example.com/repos",
            "https://***@api.example.com/repos",
        ),
        (
            "https://token@api.example.com",
            "https://***@api.example.com",
        ),
        ("https://api.example.com/a@b", "https://api.example.com/a@b"),
        ("https://api.github.com", "https://api.github.com"),
        ("not a url", "not a url"),
    ] {
        assert_eq!(github_actions::redact_url(url), shown, "{url}");
    }
}
