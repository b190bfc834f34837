//! The dashboard's page: the report's style and uPlot, and `assets/live.js`, which reads the
//! events, draws them and computes a selected window's percentiles from the seconds' HDR
//! histograms. Everything is inline (one document, like the report); its policy lets it
//! connect back to its own origin only.

use volley_report::html::{escape_html, fill, CSS, UPLOT_CSS, UPLOT_JS};

/// The page skeleton.
const TEMPLATE: &str = include_str!("assets/live.html");
/// The page's script.
const JS: &str = include_str!("assets/live.js");

/// The page for a run titled `title` (escaped here; the script sets it again as text).
pub fn render(title: &str) -> String {
    fill(
        TEMPLATE,
        &[
            ("title", &escape_html(title)),
            ("uplot_css", UPLOT_CSS),
            ("css", CSS),
            ("uplot_js", UPLOT_JS),
            ("js", JS),
        ],
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_title_is_text() {
        let page = super::render("<script>alert(1)</script>");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt; · volley live"));
    }
}
