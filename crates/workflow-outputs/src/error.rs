use std::fmt;

/// Everything that can be wrong with the inputs of a layout or bucket computation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A value outside a closed set (release type, platform, bucket type, product).
    InvalidValue {
        /// What the value is (`release_type`, `platform`, ...).
        what: &'static str,
        /// The value given.
        value: String,
        /// The allowed values, in a stable order.
        allowed: &'static [&'static str],
    },
    /// A repository that is not `owner/name`.
    InvalidRepository {
        /// The value given.
        value: String,
    },
    /// A run id that cannot be part of a key.
    InvalidRunId {
        /// The value given.
        value: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// An external repository prefix that is not empty and not `{owner}-{name}/`.
    InvalidExternalRepo {
        /// The value given.
        value: String,
    },
    /// A bucket configuration with an IAM role but no account to build its ARN from.
    MissingIamAccount {
        /// The bucket.
        bucket: String,
        /// The role.
        role: String,
    },
    /// An environment variable with an invalid value.
    Env {
        /// The variable.
        var: &'static str,
        /// What is wrong with it.
        source: Box<Error>,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidValue {
                what,
                value,
                allowed,
            } => write!(
                f,
                "{what}='{value}' is invalid, expected one of [{}]",
                allowed.join(", ")
            ),
            Error::InvalidRepository { value } => write!(
                f,
                "GitHub repository `{value}` is invalid: expected `owner/name` with both parts non-empty"
            ),
            Error::InvalidRunId { value, reason } => {
                write!(f, "Run id `{value}` is invalid: {reason}")
            }
            Error::InvalidExternalRepo { value } => write!(
                f,
                "External repository prefix `{value}` is invalid: expected empty or `{{owner}}-{{name}}/`"
            ),
            Error::MissingIamAccount { bucket, role } => write!(
                f,
                "Bucket '{bucket}' has iam_role='{role}' but no iam_account"
            ),
            Error::Env { var, .. } => write!(f, "Invalid value in environment variable `{var}`"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Env { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

impl Error {
    /// Wraps `self` as the error of environment variable `var`.
    pub(crate) fn in_env(self, var: &'static str) -> Self {
        Error::Env {
            var,
            source: Box::new(self),
        }
    }
}

/// Defines a closed set of string values as an enum with `FromStr`, `Display`, `as_str` and the
/// list of allowed values (in declaration order, which is kept alphabetical).
macro_rules! closed_set {
    (
        $(#[$meta:meta])*
        $name:ident, $what:literal, { $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every allowed spelling, in a stable (alphabetical) order.
            pub const ALLOWED: &'static [&'static str] = &[$($text),+];
            /// Every value, in the order of [`Self::ALLOWED`].
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The canonical spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text ),+
                }
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::Error;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $( $text => Ok($name::$variant), )+
                    _ => Err($crate::Error::InvalidValue {
                        what: $what,
                        value: s.to_owned(),
                        allowed: Self::ALLOWED,
                    }),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub(crate) use closed_set;
