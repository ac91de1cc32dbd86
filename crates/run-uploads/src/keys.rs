//! Checks of the values that become parts of S3 keys: stage and family names, folders below
//! the run's root, the name of a test report index page.

use crate::KeyError;

/// Checks a multi-arch stage name: not empty, and a key component.
///
/// # Errors
/// [`KeyError::NoStage`], or [`check_key_component`]'s errors.
pub fn check_stage_name(value: &str) -> Result<(), KeyError> {
    if value.is_empty() {
        return Err(KeyError::NoStage);
    }
    check_key_component(value, "stage")
}

/// Checks a value that becomes one component of an S3 key (a stage or family name): not `.`
/// or `..`, and no `/`, `\`, whitespace or control character. `what` names the flag.
///
/// # Errors
/// [`KeyError::NotAName`] or [`KeyError::BadCharacter`].
pub fn check_key_component(value: &str, what: &str) -> Result<(), KeyError> {
    if value == "." || value == ".." {
        return Err(KeyError::NotAName {
            what: what.to_owned(),
            value: value.to_owned(),
        });
    }
    if let Some(found) = value
        .chars()
        .find(|c| matches!(c, '/' | '\\') || c.is_whitespace() || c.is_control())
    {
        return Err(KeyError::BadCharacter {
            what: what.to_owned(),
            value: value.to_owned(),
            found,
        });
    }
    Ok(())
}

/// Checks a `/`-separated place below the run's root (`--subfolder`, `--log-destination`):
/// no empty, `.` or `..` component, no whitespace, `\` or control character. `what` names
/// the flag.
///
/// # Errors
/// [`KeyError::Empty`], [`KeyError::EmptyComponent`], or the error of the first component
/// that [`check_key_component`] refuses.
pub fn check_key_path(value: &str, what: &str) -> Result<(), KeyError> {
    if value.is_empty() {
        return Err(KeyError::Empty {
            what: what.to_owned(),
        });
    }
    for component in value.split('/') {
        if component.is_empty() {
            return Err(KeyError::EmptyComponent {
                what: what.to_owned(),
                value: value.to_owned(),
            });
        }
        check_key_component(component, what)?;
    }
    Ok(())
}

/// Checks `--index-file-name`: one plain file name (as [`check_key_component`]) that the
/// storage backend serves as `text/html` (`.html`, `.htm`, any case).
///
/// # Errors
/// [`KeyError::Empty`], [`KeyError::NotHtml`], or what [`check_key_component`] refuses.
pub fn check_index_file_name(value: &str) -> Result<(), KeyError> {
    const WHAT: &str = "--index-file-name";
    if value.is_empty() {
        return Err(KeyError::Empty {
            what: WHAT.to_owned(),
        });
    }
    check_key_component(value, WHAT)?;
    let content_type = storage_backend::infer_content_type(value);
    if content_type != "text/html" {
        return Err(KeyError::NotHtml {
            value: value.to_owned(),
            content_type: content_type.to_owned(),
        });
    }
    Ok(())
}

/// The legacy `--log-destination` value: `None` when it is blank (as the reference), else the
/// value without surrounding whitespace and `/`, checked by [`check_key_path`].
///
/// # Errors
/// [`KeyError::RunRoot`] when nothing is left but `/`, else as [`check_key_path`].
pub fn log_destination(value: &str) -> Result<Option<String>, KeyError> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    let path = value.trim_matches('/');
    if path.is_empty() {
        return Err(KeyError::RunRoot(value.to_owned()));
    }
    check_key_path(path, "--log-destination")?;
    Ok(Some(path.to_owned()))
}

#[cfg(test)]
mod tests;
