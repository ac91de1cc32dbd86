//! Integration tests of the GitHub Actions edge.

extern crate rock_ci_github_actions as github_actions;

mod api;
mod event;
mod outputs;

use std::collections::HashMap;

/// A variable lookup over a fixed table.
pub(crate) fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k| map.get(k).cloned()
}
