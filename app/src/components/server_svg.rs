//! An SVG the server renders into a page, as the page's `Resource` holds it.
//!
//! The run page's charts (and a comparison's telemetry overlay) come from server functions
//! through `Resource`s and are shown with `inner_html`. A `Resource`'s value is also
//! serialized into the page for hydration, so a chart held as a plain `String` travels
//! twice: as markup, and again as a JSON string (2.5 MB of a large run's 3.5 MB page).
//!
//! `ServerSvg` serializes as `null`: the browser hydrates with an empty string, and
//! hydrating `inner_html` leaves the server's markup in place (tachys writes an element's
//! inner HTML when it builds it or when the value changes, never while hydrating). A value
//! fetched later in the browser (another view by URL, another run) arrives in the server
//! function's own type, which carries the markup, and is wrapped on arrival; so views still
//! change by URL without a reload, a permalink draws the same view on the server, and with
//! JavaScript off the HTML holds every chart.
//!
//! Why this and not another of Leptos 0.8's tools: a `LocalResource` renders nothing on
//! the server (no charts with JavaScript off, no hover titles in the HTML); `OnceResource`
//! and blocking resources are serialized all the same; islands would change how the whole
//! app hydrates; `<img src=chart.svg>` loses the hover titles; fetching `chart.svg` in the
//! browser would be a second path to the same markup, and a third copy on the first load.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Server-rendered SVG markup; empty in the browser until a value fetched there replaces it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerSvg(pub String);

impl From<String> for ServerSvg {
    fn from(svg: String) -> Self {
        Self(svg)
    }
}

impl Serialize for ServerSvg {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

impl<'de> Deserialize<'de> for ServerSvg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d)?;
        Ok(Self::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_markup_stays_out_of_the_hydration_data() {
        let held = (vec![1, 2], ServerSvg("<svg><title>p99</title></svg>".into()));
        let json = serde_json::to_string(&held).unwrap();
        assert_eq!(json, "[[1,2],null]");
        let back: (Vec<i32>, ServerSvg) = serde_json::from_str(&json).unwrap();
        assert_eq!(back, (vec![1, 2], ServerSvg::default()));
    }
}
