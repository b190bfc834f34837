//! Self-contained HTML report (placeholder until the charts land): the Markdown tables in a
//! page with no external resources.

use super::model::Report;
use super::Reporter;

/// HTML reporter.
pub struct HtmlReporter;

impl Reporter for HtmlReporter {
    fn render(&self, report: &Report) -> String {
        let md = super::markdown::MarkdownReporter.render(report);
        let mut body = String::new();
        for ch in md.chars() {
            match ch {
                '<' => body.push_str("&lt;"),
                '>' => body.push_str("&gt;"),
                '&' => body.push_str("&amp;"),
                c => body.push(c),
            }
        }
        format!(
            "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>volley report</title></head><body><pre>{body}</pre></body></html>\n"
        )
    }
}
