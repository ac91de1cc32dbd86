//! The one S3 client factory of the workspace.

use aws_config::BehaviorVersion;
use aws_config::environment::EnvironmentVariableRegionProvider;
use aws_config::meta::region::RegionProviderChain;
use aws_config::profile::ProfileFileRegionProvider;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{
    Credentials, ProvideCredentials, Region, RequestChecksumCalculation, ResponseChecksumValidation,
};
use std::time::Duration;

/// Environment variables the factory reads itself (the SDK reads the rest of the standard
/// `AWS_*` set: keys, profiles, SSO, web identity, region).
pub struct EnvVars;

impl EnvVars {
    /// S3-specific endpoint (takes precedence over [`Self::AWS_ENDPOINT_URL`]).
    pub const AWS_ENDPOINT_URL_S3: &'static str = "AWS_ENDPOINT_URL_S3";
    /// Endpoint of every AWS service; with an endpoint, requests use path-style addressing.
    pub const AWS_ENDPOINT_URL: &'static str = "AWS_ENDPOINT_URL";
    /// `when_supported` restores the SDK default of sending CRC32 checksums on every upload;
    /// the factory's default is `when_required`, which S3-compatible servers accept.
    pub const AWS_REQUEST_CHECKSUM_CALCULATION: &'static str = "AWS_REQUEST_CHECKSUM_CALCULATION";
    /// As [`Self::AWS_REQUEST_CHECKSUM_CALCULATION`], for validating responses.
    pub const AWS_RESPONSE_CHECKSUM_VALIDATION: &'static str = "AWS_RESPONSE_CHECKSUM_VALIDATION";
    /// Seconds to wait for a connection ([`ClientOptions::connect_timeout`]).
    pub const ROCK_CI_CONNECT_TIMEOUT: &'static str = "ROCK_CI_CONNECT_TIMEOUT";
    /// Seconds to wait for a response's first byte, and between two pieces of a body
    /// ([`ClientOptions::read_timeout`]).
    pub const ROCK_CI_READ_TIMEOUT: &'static str = "ROCK_CI_READ_TIMEOUT";
    /// Seconds one request may take with all its retries, before the time its body needs at
    /// the slowest expected rate ([`ClientOptions::operation_timeout`]).
    pub const ROCK_CI_OPERATION_TIMEOUT: &'static str = "ROCK_CI_OPERATION_TIMEOUT";
    /// Attempts per request ([`ClientOptions::max_attempts`]).
    pub const ROCK_CI_MAX_ATTEMPTS: &'static str = "ROCK_CI_MAX_ATTEMPTS";
    /// A PEM file of the certificate authorities to trust instead of the system's (as boto3
    /// and the AWS CLI read it); else the selected profile's `ca_bundle`. Without either, the
    /// system's store, which `SSL_CERT_FILE` and `SSL_CERT_DIR` point elsewhere.
    pub const AWS_CA_BUNDLE: &'static str = "AWS_CA_BUNDLE";
}

/// Network limits given on a command line, each overriding the variable of the same meaning
/// ([`EnvVars::ROCK_CI_CONNECT_TIMEOUT`], ...), which the S3 and GitHub clients read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitOverrides {
    /// Seconds to wait for a connection.
    pub connect_timeout: Option<u64>,
    /// Seconds to wait for a response to start, and for the next bytes of a body.
    pub read_timeout: Option<u64>,
    /// Seconds one request may take with its retries.
    pub operation_timeout: Option<u64>,
    /// Attempts per request.
    pub max_attempts: Option<u32>,
}

impl LimitOverrides {
    /// `env`, with the variables these limits set answered from them.
    pub fn over<'a>(
        self,
        env: impl Fn(&str) -> Option<String> + 'a,
    ) -> impl Fn(&str) -> Option<String> + 'a {
        move |var: &str| {
            let given = match var {
                EnvVars::ROCK_CI_CONNECT_TIMEOUT => self.connect_timeout,
                EnvVars::ROCK_CI_READ_TIMEOUT => self.read_timeout,
                EnvVars::ROCK_CI_OPERATION_TIMEOUT => self.operation_timeout,
                EnvVars::ROCK_CI_MAX_ATTEMPTS => self.max_attempts.map(u64::from),
                _ => None,
            };
            given.map(|v| v.to_string()).or_else(|| env(var))
        }
    }
}

/// The values of the S3 client's environment that logs must not show: the secret key, the
/// session token, and the `user:password` of the endpoint URLs (as written, percent-decoded,
/// and the password alone; see [`storage_location::url_secrets`]).
pub fn secret_values(lookup: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let urls = [EnvVars::AWS_ENDPOINT_URL, EnvVars::AWS_ENDPOINT_URL_S3]
        .into_iter()
        .filter_map(lookup);
    ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]
        .into_iter()
        .filter_map(lookup)
        .chain(urls.flat_map(|url| storage_location::url_secrets(&url)))
        .collect()
}

/// The region when neither the options nor the SDK's chain give one (where TheRock's buckets
/// live).
pub const DEFAULT_REGION: &str = "us-east-2";

/// When requests go unsigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Anonymous {
    /// Always signed; a missing credential is an error at the first request.
    #[default]
    Never,
    /// Unsigned when the default chain finds no credentials at all (reads of public buckets).
    WhenNoCredentials,
    /// Always unsigned.
    Always,
}

/// How to build an S3 client.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// Region; else `AWS_REGION`, else the profile's, else [`DEFAULT_REGION`].
    pub region: Option<String>,
    /// Endpoint; else [`EnvVars::AWS_ENDPOINT_URL_S3`], else [`EnvVars::AWS_ENDPOINT_URL`].
    pub endpoint_url: Option<String>,
    /// Path-style addressing; default: on when an endpoint is set.
    pub force_path_style: Option<bool>,
    /// When to go unsigned.
    pub anonymous: Anonymous,
    /// Static credentials instead of the default chain.
    pub credentials: Option<Credentials>,
    /// Attempts per request, made by [`S3Client::retry`] (the SDK's own retries are off):
    /// transient failures only, with a doubling backoff; a body that breaks off is asked for
    /// again from where it broke. Each retry is logged and counted.
    pub max_attempts: u32,
    /// Delay before the first retry (0.5 s by default), doubled per retry up to 20 s.
    pub initial_backoff: Duration,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Longest wait for a response's first byte, and for the next piece of a body.
    pub read_timeout: Duration,
    /// Longest one request may take with all its retries, plus the time its body takes at
    /// [`ClientOptions::min_throughput`]: an endpoint that never answers fails after it.
    pub operation_timeout: Duration,
    /// The slowest rate (bytes per second) a body is expected to move at.
    pub min_throughput: u64,
    /// Idle connections kept per host: size it to the transfers in flight
    /// (files × parts per file) so that connections are reused, not re-opened.
    pub max_idle_connections: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            region: None,
            endpoint_url: None,
            force_path_style: None,
            anonymous: Anonymous::Never,
            credentials: None,
            max_attempts: 5,
            initial_backoff: Duration::from_millis(500),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(20),
            operation_timeout: Duration::from_mins(1),
            min_throughput: 64 << 10,
            max_idle_connections: crate::DEFAULT_CONCURRENCY * crate::DEFAULT_PART_CONCURRENCY,
        }
    }
}

impl ClientOptions {
    /// The options of a client that reads buckets in `region`: signed with the credentials the
    /// default chain finds, unsigned when there are none (the public CI buckets).
    pub fn reading(region: &str) -> Self {
        Self {
            region: Some(region.to_owned()),
            anonymous: Anonymous::WhenNoCredentials,
            ..Self::default()
        }
    }
}

/// The longest cause a retry line shows: a copy's cause names both objects again, and a
/// server's error body can follow; the line stays readable in a log.
const RETRY_CAUSE_CHARS: usize = 240;

/// `++ Retry {n}/{retries} for {location}: {cause}`, the cause cut to [`RETRY_CAUSE_CHARS`]
/// characters (`…` marking the cut).
fn retry_line(n: u32, retries: u32, location: &str, cause: &str) -> String {
    let shown: String = if cause.chars().count() > RETRY_CAUSE_CHARS {
        let cut: String = cause.chars().take(RETRY_CAUSE_CHARS).collect();
        format!("{cut}…")
    } else {
        cause.to_owned()
    };
    format!("++ Retry {n}/{retries} for {location}: {shown}")
}

/// The time limits and retry budget of a client's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// See [`ClientOptions::max_attempts`].
    pub max_attempts: u32,
    /// See [`ClientOptions::initial_backoff`].
    pub initial_backoff: Duration,
    /// See [`ClientOptions::read_timeout`].
    pub read_timeout: Duration,
    /// See [`ClientOptions::operation_timeout`].
    pub operation_timeout: Duration,
    /// See [`ClientOptions::min_throughput`].
    pub min_throughput: u64,
}

impl Limits {
    /// How long a request moving `bytes` of body may take with all its retries.
    pub fn deadline(&self, bytes: u64) -> Duration {
        self.operation_timeout + Duration::from_secs(bytes / self.min_throughput.max(1))
    }
}

/// `options` with the limits the environment sets (whole seconds; unparsable values are
/// ignored with a warning).
fn with_env_limits(
    options: &ClientOptions,
    non_empty: &dyn Fn(&'static str) -> Option<String>,
) -> ClientOptions {
    let mut options = options.clone();
    let number = |var: &'static str| {
        let value = non_empty(var)?;
        let parsed = value.trim().parse::<u64>().ok();
        if parsed.is_none() {
            tracing::warn!("Ignoring {var}={value}: not a whole number");
        }
        parsed
    };
    if let Some(n) = number(EnvVars::ROCK_CI_CONNECT_TIMEOUT) {
        options.connect_timeout = Duration::from_secs(n.max(1));
    }
    if let Some(n) = number(EnvVars::ROCK_CI_READ_TIMEOUT) {
        options.read_timeout = Duration::from_secs(n.max(1));
    }
    if let Some(n) = number(EnvVars::ROCK_CI_OPERATION_TIMEOUT) {
        options.operation_timeout = Duration::from_secs(n.max(1));
    }
    if let Some(n) = number(EnvVars::ROCK_CI_MAX_ATTEMPTS) {
        options.max_attempts = u32::try_from(n.max(1)).unwrap_or(u32::MAX);
    }
    options
}

/// The endpoint override: `explicit` (a flag or option), else
/// [`EnvVars::AWS_ENDPOINT_URL_S3`], else [`EnvVars::AWS_ENDPOINT_URL`] read through `lookup`
/// (empty values count as unset). Tools call it before any request so that a malformed value
/// is a usage error at once.
///
/// # Errors
/// [`crate::Error::InvalidEndpoint`] when the value in effect is not an `http://` or
/// `https://` URL with a host.
pub fn endpoint_override(
    explicit: Option<&str>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, crate::Error> {
    let non_empty = |var| lookup(var).filter(|v: &String| !v.is_empty());
    let found = match explicit {
        Some(url) => Some(("the endpoint URL", url.to_owned())),
        None => non_empty(EnvVars::AWS_ENDPOINT_URL_S3)
            .map(|url| (EnvVars::AWS_ENDPOINT_URL_S3, url))
            .or_else(|| {
                non_empty(EnvVars::AWS_ENDPOINT_URL).map(|url| (EnvVars::AWS_ENDPOINT_URL, url))
            }),
    };
    let Some((var, url)) = found else {
        return Ok(None);
    };
    if storage_location::is_http_url(&url) {
        Ok(Some(url))
    } else {
        Err(crate::Error::InvalidEndpoint {
            var,
            value: storage_location::redact_url(&url),
        })
    }
}

/// A configured S3 client.
#[derive(Debug, Clone)]
pub struct S3Client {
    client: aws_sdk_s3::Client,
    signed: bool,
    endpoint_url: Option<String>,
    endpoint: String,
    limits: Limits,
    retries: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl S3Client {
    /// Builds a client from `options` and the SDK's default chain.
    ///
    /// # Errors
    /// As [`S3Client::connect_with`].
    pub async fn connect(options: &ClientOptions) -> Result<Self, crate::Error> {
        Self::connect_with(options, &|var| std::env::var(var).ok()).await
    }

    /// As [`S3Client::connect`], reading the factory's own variables through `lookup`.
    ///
    /// # Errors
    /// [`crate::Error::CaBundle`] when [`EnvVars::AWS_CA_BUNDLE`] names a file that cannot be
    /// read or holds no certificate.
    pub async fn connect_with(
        options: &ClientOptions,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, crate::Error> {
        let non_empty = |var| lookup(var).filter(|v: &String| !v.is_empty());
        let options = &with_env_limits(options, &non_empty);
        let tls = tls_context(ca_bundle(lookup).await)?;
        let endpoint_url = endpoint_override(options.endpoint_url.as_deref(), lookup)?;

        let loader = || {
            let http_client = aws_smithy_http_client::Builder::new()
                .pool_max_idle_per_host(options.max_idle_connections.max(1))
                .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                    aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
                ))
                .tls_context(tls.clone())
                .build_https();
            let mut loader = aws_config::defaults(BehaviorVersion::latest())
                .http_client(http_client)
                // One retry layer: ours ([`S3Client::retry`]), which logs and counts each retry
                // and resumes a body from the byte reached. Retries inside the SDK would be
                // silent and multiply the attempts.
                .retry_config(RetryConfig::disabled())
                .timeout_config(
                    TimeoutConfig::builder()
                        .connect_timeout(options.connect_timeout)
                        .read_timeout(options.read_timeout)
                        .build(),
                );
            loader = match &options.region {
                Some(region) => loader.region(Region::new(region.clone())),
                // The environment, then the profile, then the default: never the instance
                // metadata service, whose probes stall every start off EC2.
                None => loader.region(
                    RegionProviderChain::first_try(EnvironmentVariableRegionProvider::new())
                        .or_else(ProfileFileRegionProvider::new())
                        .or_else(Region::new(DEFAULT_REGION)),
                ),
            };
            if let Some(credentials) = &options.credentials {
                loader = loader.credentials_provider(credentials.clone());
            }
            loader
        };

        let mut signed = options.anonymous != Anonymous::Always;
        let mut sdk_config = if signed {
            loader().load().await
        } else {
            loader().no_credentials().load().await
        };
        if options.anonymous == Anonymous::WhenNoCredentials && options.credentials.is_none() {
            let found = match sdk_config.credentials_provider() {
                Some(provider) => provider.provide_credentials().await.is_ok(),
                None => false,
            };
            if !found {
                tracing::info!("No AWS credentials found; using unsigned requests");
                signed = false;
                sdk_config = loader().no_credentials().load().await;
            }
        }

        let mut builder = aws_sdk_s3::config::Builder::from(&sdk_config);
        if sdk_config.region().is_none() {
            builder = builder.region(Region::new(DEFAULT_REGION));
        }
        if let Some(endpoint) = &endpoint_url {
            builder = builder.endpoint_url(endpoint);
        }
        builder =
            builder.force_path_style(options.force_path_style.unwrap_or(endpoint_url.is_some()));
        if non_empty(EnvVars::AWS_REQUEST_CHECKSUM_CALCULATION).is_none() {
            builder =
                builder.request_checksum_calculation(RequestChecksumCalculation::WhenRequired);
        }
        if non_empty(EnvVars::AWS_RESPONSE_CHECKSUM_VALIDATION).is_none() {
            builder =
                builder.response_checksum_validation(ResponseChecksumValidation::WhenRequired);
        }
        let config = builder.retry_classifier(UntrustedCertificate).build();
        let endpoint = endpoint_url.as_deref().map_or_else(
            || {
                let region = config.region().map_or(DEFAULT_REGION, |r| r.as_ref());
                format!("https://s3.{region}.amazonaws.com")
            },
            storage_location::redact_url,
        );
        Ok(Self {
            client: aws_sdk_s3::Client::from_conf(config),
            signed,
            endpoint_url,
            endpoint,
            limits: Limits {
                max_attempts: options.max_attempts.max(1),
                initial_backoff: options.initial_backoff,
                read_timeout: options.read_timeout,
                operation_timeout: options.operation_timeout,
                min_throughput: options.min_throughput,
            },
            retries: std::sync::Arc::default(),
        })
    }

    /// The endpoint requests go to (the override, else the region's AWS endpoint), with any
    /// credentials in it shown as `***`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The time limits and retry budget.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Transfers retried so far by this client and its clones.
    pub fn retries(&self) -> u64 {
        self.retries.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counts a retry made on this client's behalf (shown with [`S3Client::retries`]).
    pub fn count_retry(&self) {
        self.retries
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Runs `attempt` until it succeeds or fails for good: a failure that `retryable` accepts
    /// is tried again, up to the client's attempts, after a backoff doubling from
    /// [`ClientOptions::initial_backoff`] (at most 20 s); each retry is logged as
    /// `++ Retry i/N for LOCATION: reason` and counted. The one retry loop of the workspace:
    /// requests, resumed bodies and whole artifacts fetched again all go through it.
    pub async fn retry<T, E, F, Fut>(
        &self,
        location: &str,
        retryable: impl Fn(&E) -> bool,
        mut attempt: F,
    ) -> Result<T, E>
    where
        E: std::error::Error,
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, E>>,
    {
        let max = self.limits.max_attempts;
        let mut n = 1;
        loop {
            match Box::pin(attempt()).await {
                Err(e) if n < max && retryable(&e) => {
                    self.count_retry();
                    tracing::warn!("{}", retry_line(n, max - 1, location, &crate::chain(&e)));
                    let wait = self
                        .limits
                        .initial_backoff
                        .saturating_mul(1 << (n - 1).min(10))
                        .min(Duration::from_secs(20));
                    tokio::time::sleep(wait).await;
                    n += 1;
                }
                other => return other,
            }
        }
    }

    /// The SDK client.
    pub fn sdk(&self) -> &aws_sdk_s3::Client {
        &self.client
    }

    /// Whether requests are signed.
    pub fn is_signed(&self) -> bool {
        self.signed
    }

    /// The endpoint override, if any.
    pub fn endpoint_url(&self) -> Option<&str> {
        self.endpoint_url.as_deref()
    }
}

/// [`EnvVars::AWS_CA_BUNDLE`], else the selected profile's `ca_bundle`.
async fn ca_bundle(lookup: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    match lookup(EnvVars::AWS_CA_BUNDLE).filter(|v| !v.is_empty()) {
        Some(bundle) => Some(bundle),
        None => profile_ca_bundle(lookup).await,
    }
}

/// The `ca_bundle` of the selected profile of the shared config files (`AWS_CONFIG_FILE`,
/// `AWS_SHARED_CREDENTIALS_FILE`, `AWS_PROFILE`, read through `lookup`), as boto3 reads it; a
/// relative path is taken as it is (from the working directory), as boto3 takes it.
async fn profile_ca_bundle(lookup: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    use aws_types::os_shim_internal::{Env, Fs};
    let vars: std::collections::HashMap<String, String> = [
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "HOME",
        "USERPROFILE",
    ]
    .into_iter()
    .filter_map(|k| {
        lookup(k)
            .filter(|v| !v.is_empty())
            .map(|v| (k.to_owned(), v))
    })
    .collect();
    let env = Env::from(vars);
    let files = aws_runtime::env_config::file::EnvConfigFiles::default();
    match aws_config::profile::load(&Fs::real(), &env, &files, None).await {
        Ok(profiles) => profiles
            .get("ca_bundle")
            .filter(|v| !v.is_empty())
            .map(str::to_owned),
        // The SDK reports unreadable or malformed files itself when it loads credentials.
        Err(_) => None,
    }
}

/// The certificate authorities a client trusts: those of `ca_bundle` (a PEM file) instead of
/// the system's when it is set.
fn tls_context(
    ca_bundle: Option<String>,
) -> Result<aws_smithy_http_client::tls::TlsContext, crate::Error> {
    use aws_smithy_http_client::tls::{TlsContext, TrustStore};
    let named = std::path::PathBuf::from(ca_bundle.clone().unwrap_or_default());
    let store = match ca_bundle {
        None => TrustStore::default(),
        Some(path) => {
            let path = std::path::PathBuf::from(path);
            let bad = |reason: String| crate::Error::CaBundle {
                path: path.clone(),
                reason,
            };
            let pem = fs_err::read(&path).map_err(|e| bad(e.to_string()))?;
            let certificates = <rustls::pki_types::CertificateDer<'_> as rustls::pki_types::pem::PemObject>::pem_slice_iter(&pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad(format!("not a PEM file of certificates ({e})")))?;
            if certificates.is_empty() {
                return Err(bad("holds no PEM certificate".to_owned()));
            }
            TrustStore::empty()
                .with_native_roots(false)
                .with_pem_certificate(pem)
        }
    };
    TlsContext::builder()
        .with_trust_store(store)
        .build()
        .map_err(|e| crate::Error::CaBundle {
            path: named,
            reason: e.to_string(),
        })
}

/// Whether `err`, or what caused it, is a TLS handshake that failed on the server's
/// certificate: asking again gets the same certificate.
pub(crate) fn is_untrusted_certificate(err: &(dyn std::error::Error + 'static)) -> bool {
    let is_certificate = |e: &(dyn std::error::Error + 'static)| -> bool {
        e.downcast_ref::<rustls::Error>()
            .is_some_and(|e| matches!(e, rustls::Error::InvalidCertificate(_)))
    };
    let mut source = Some(err);
    while let Some(e) = source {
        // An I/O error's `source()` skips the error it wraps: look at that one too.
        let wrapped = e
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            .map(|inner| inner as &(dyn std::error::Error + 'static));
        if is_certificate(e) || wrapped.is_some_and(is_untrusted_certificate) {
            return true;
        }
        source = e.source();
    }
    false
}

/// A retry classifier that forbids retrying a connection whose TLS handshake failed on the
/// server's certificate (the SDK's own classifiers retry every I/O failure).
#[derive(Debug)]
struct UntrustedCertificate;

impl aws_smithy_runtime_api::client::retries::classifiers::ClassifyRetry for UntrustedCertificate {
    fn classify_retry(
        &self,
        ctx: &aws_smithy_runtime_api::client::interceptors::context::InterceptorContext,
    ) -> aws_smithy_runtime_api::client::retries::classifiers::RetryAction {
        use aws_smithy_runtime_api::client::retries::classifiers::RetryAction;
        match ctx.output_or_error() {
            Some(Err(err))
                if err
                    .as_connector_error()
                    .is_some_and(|c| is_untrusted_certificate(c)) =>
            {
                RetryAction::RetryForbidden
            }
            _ => RetryAction::NoActionIndicated,
        }
    }

    fn name(&self) -> &'static str {
        "untrusted server certificate"
    }

    fn priority(
        &self,
    ) -> aws_smithy_runtime_api::client::retries::classifiers::RetryClassifierPriority {
        aws_smithy_runtime_api::client::retries::classifiers::RetryClassifierPriority::run_after(
            aws_smithy_runtime_api::client::retries::classifiers::RetryClassifierPriority::transient_error_classifier(),
        )
    }
}

#[cfg(test)]
mod retry_line_tests {
    #[test]
    fn a_long_cause_is_cut_and_says_so() {
        let location = "s3://bucket-a/run/a.tar.zst -> s3://bucket-b/release/a.tar.zst";
        let cause = format!("Failed to copy `{location}`: {}", "é".repeat(600));
        let line = super::retry_line(1, 4, location, &cause);
        assert!(line.starts_with(&format!("++ Retry 1/4 for {location}: Failed to copy")));
        assert!(line.ends_with('…'), "{line}");
        assert!(line.chars().count() < 400, "{} chars", line.chars().count());
        let short = super::retry_line(2, 4, "s3://b/k", "timed out");
        assert_eq!(short, "++ Retry 2/4 for s3://b/k: timed out");
    }
}
