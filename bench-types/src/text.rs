//! Characters no text latlab stores may hold, checked the same way everywhere (the browser,
//! the API's JSON bodies, imports, comparison titles and views):
//!
//! - NUL and the other C0/C1 control characters except tab, line feed and carriage return:
//!   Postgres cannot store NUL in `text` or `jsonb`, and the rest only ever arrive by
//!   mistake or by malice;
//! - Unicode bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F,
//!   U+061C): they make a label read differently from what it holds ("Trojan Source").
//!
//! Single-line fields (labels, titles) refuse tab and line breaks as well, in their own
//! validators.

use crate::validate::ValidationErrors;

/// The first character of `s` that no stored text may hold.
pub fn forbidden_char(s: &str) -> Option<char> {
    s.chars().find(|&c| is_forbidden(c))
}

fn is_forbidden(c: char) -> bool {
    let control = c.is_control() && !matches!(c, '\t' | '\n' | '\r');
    let bidi =
        matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}');
    control || bidi
}

/// How a refused character is named in an error: `U+0000 (NUL)`.
pub fn describe(c: char) -> String {
    let name = match c {
        '\0' => " (NUL)",
        '\u{202E}' => " (right-to-left override)",
        '\u{202D}' => " (left-to-right override)",
        '\u{2066}'..='\u{2069}' | '\u{202A}'..='\u{202C}' | '\u{200E}' | '\u{200F}' | '\u{061C}' => {
            " (bidirectional control)"
        }
        _ if c.is_control() => " (control character)",
        _ => "",
    };
    format!("U+{:04X}{name}", c as u32)
}

/// The first string (object key or value) anywhere in `v` holding a forbidden character:
/// its dotted path under `root` (`sampling.extra_body.messages[0].content`) and the
/// character.
pub fn find_in_json(root: &str, v: &serde_json::Value) -> Option<(String, char)> {
    use serde_json::Value;
    match v {
        Value::String(s) => forbidden_char(s).map(|c| (root.to_string(), c)),
        Value::Array(items) => {
            items.iter().enumerate().find_map(|(i, x)| find_in_json(&format!("{root}[{i}]"), x))
        }
        Value::Object(map) => map.iter().find_map(|(k, x)| {
            let path = if root.is_empty() { k.clone() } else { format!("{root}.{k}") };
            match forbidden_char(k) {
                Some(c) => Some((path, c)),
                None => find_in_json(&path, x),
            }
        }),
        _ => None,
    }
}

/// Pushes an error for `field` when `s` holds a forbidden character.
pub fn check_chars(e: &mut ValidationErrors, field: &str, s: &str) {
    if let Some(c) = forbidden_char(s) {
        e.push(field, format!("must not contain {}", describe(c)));
    }
}

/// Pushes an error naming the nested field when any string in `v` holds a forbidden
/// character.
pub fn check_json(e: &mut ValidationErrors, field: &str, v: &serde_json::Value) {
    if let Some((path, c)) = find_in_json(field, v) {
        e.push(&path, format!("must not contain {}", describe(c)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_controls_and_bidi_overrides_are_found_and_line_breaks_are_not() {
        assert_eq!(forbidden_char("a\0b"), Some('\0'));
        assert_eq!(forbidden_char("label \u{202E}gnp.exe"), Some('\u{202E}'));
        assert_eq!(forbidden_char("x\u{2067}y"), Some('\u{2067}'));
        assert_eq!(forbidden_char("bell\u{7}"), Some('\u{7}'));
        assert_eq!(forbidden_char("c1\u{85}"), Some('\u{85}'));
        assert_eq!(forbidden_char("multi\nline\r\n\tblock, 量子化, émoji 🚀"), None);
        assert_eq!(describe('\0'), "U+0000 (NUL)");
        assert_eq!(describe('\u{202E}'), "U+202E (right-to-left override)");
    }

    #[test]
    fn nested_json_names_the_path_of_the_bad_string() {
        let v = serde_json::json!({"a": [1, {"b": "ok"}, {"c": "bad\u{0}"}]});
        assert_eq!(
            find_in_json("sampling.extra_body", &v),
            Some(("sampling.extra_body.a[2].c".into(), '\0'))
        );
        let key = serde_json::json!({"k\u{202E}": 1});
        assert_eq!(find_in_json("view", &key), Some(("view.k\u{202E}".into(), '\u{202E}')));
        assert_eq!(find_in_json("", &serde_json::json!({"x": ["fine", 2, null]})), None);
    }
}
