//! The GPU family table of a TheRock checkout (`cmake/therock_amdgpu_targets.cmake`): which
//! GPU targets each family stands for, and which family an artifact group names.

use std::collections::BTreeSet;

/// GPU families that the family table does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Unknown AMD GPU families: [{}]. Known families: {}",
    quoted(unknown),
    known.join(", ")
)]
pub struct UnknownFamilies {
    /// The unknown names.
    pub unknown: Vec<String>,
    /// The known names.
    pub known: Vec<String>,
}

/// The items quoted and joined as Python prints a list of strings (without the brackets).
fn quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("'{i}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Family → targets, from the `therock_add_amdgpu_target(...)` calls of the cmake file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FamilyMap {
    /// In file order; every target is also a family of itself.
    families: Vec<(String, Vec<String>)>,
}

fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut s = String::new();
            for c in chars.by_ref() {
                if c == '"' {
                    break;
                }
                s.push(c);
            }
            out.push(s);
        } else {
            let mut s = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || c == '"' {
                    break;
                }
                s.push(c);
                chars.next();
            }
            out.push(s);
        }
    }
    out
}

impl FamilyMap {
    /// Parses the text of `therock_amdgpu_targets.cmake`.
    pub fn parse(cmake: &str) -> Self {
        let mut map = FamilyMap::default();
        let mut rest = cmake;
        while let Some(at) = rest.find("therock_add_amdgpu_target(") {
            let args_start = at + "therock_add_amdgpu_target(".len();
            let Some(len) = rest[args_start..].find(')') else {
                break;
            };
            let args: String = rest[args_start..args_start + len]
                .lines()
                .map(|l| l.split('#').next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n");
            rest = &rest[args_start + len..];
            let toks = tokens(&args);
            let Some(target) = toks.first() else {
                continue;
            };
            map.add(target, target);
            if let Some(f) = toks.iter().position(|t| t == "FAMILY") {
                for family in toks[f + 1..]
                    .iter()
                    .take_while(|t| *t != "EXCLUDE_TARGET_PROJECTS")
                {
                    map.add(family, target);
                }
            }
        }
        map
    }

    fn add(&mut self, family: &str, target: &str) {
        match self.families.iter_mut().find(|(f, _)| f == family) {
            Some((_, targets)) => {
                if !targets.iter().any(|t| t == target) {
                    targets.push(target.to_owned());
                }
            }
            None => self
                .families
                .push((family.to_owned(), vec![target.to_owned()])),
        }
    }

    /// The family an artifact group stands for: the group itself when it is a family (or a
    /// target), else the longest family it starts with followed by `-` — the group of a build
    /// variant (`gfx94X-dcgpu-asan`, `gfx94X-dcgpu-host-asan`); `None` when there is none.
    pub fn family_of_group<'a>(&'a self, group: &str) -> Option<&'a str> {
        self.families
            .iter()
            .map(|(f, _)| f.as_str())
            .filter(|f| {
                group == *f
                    || group
                        .strip_prefix(f)
                        .is_some_and(|rest| rest.starts_with('-') && rest.len() > 1)
            })
            .max_by_key(|f| f.len())
    }

    /// Every family name (targets included), sorted, without repeats.
    pub fn family_names(&self) -> Vec<&str> {
        let known: BTreeSet<&str> = self.families.iter().map(|(k, _)| k.as_str()).collect();
        known.into_iter().collect()
    }

    /// The targets of `family` in file order; none for an unknown family.
    pub fn targets_of(&self, family: &str) -> &[String] {
        self.families
            .iter()
            .find(|(f, _)| f == family)
            .map_or(&[], |(_, targets)| targets.as_slice())
    }

    /// The targets of `families`, in order, de-duplicated; unknown families are an error
    /// listing them and every known family.
    pub fn expand(&self, families: &[String]) -> Result<Vec<String>, UnknownFamilies> {
        let unknown: Vec<&String> = families
            .iter()
            .filter(|f| !self.families.iter().any(|(k, _)| k == *f))
            .collect();
        if !unknown.is_empty() {
            return Err(UnknownFamilies {
                unknown: unknown.into_iter().cloned().collect(),
                known: self.family_names().into_iter().map(str::to_owned).collect(),
            });
        }
        let mut out: Vec<String> = Vec::new();
        for f in families {
            let (_, targets) = self.families.iter().find(|(k, _)| k == f).expect("checked");
            for t in targets {
                if !out.contains(t) {
                    out.push(t.clone());
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
