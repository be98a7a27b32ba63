//! The arena's win rates: one horizontal bar per method (best on top) with its bootstrap
//! interval as a whisker.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::render::{DrawResult, Drawing, write_image};
use crate::arena::Standing;
use crate::error::Result;

/// Pixels: the room for method names, the bar area's width, a row's height.
const LEFT: i32 = 150;
const WIDTH: i32 = 500;
const ROW: i32 = 22;

/// Draws `standings` (sorted as given) to `path` (`.svg` or `.png`), titled with the metric.
///
/// # Errors
/// [`crate::error::CliError::Output`] for other extensions or when writing fails.
pub fn render_win_rates(standings: &[Standing], metric: &str, path: &Path) -> Result<()> {
    let size = ((LEFT + WIDTH + 40) as u32, (70 + ROW * standings.len() as i32 + 30) as u32);
    write_image(path, size, &WinRates(standings, metric))
}

struct WinRates<'a>(&'a [Standing], &'a str);

impl Drawing for WinRates<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB::ErrorType> {
        root.fill(&WHITE)?;
        let title = format!("mean win rate on {} (bars), bootstrap interval (whiskers)", self.1);
        root.draw(&Text::new(title, (10, 12), ("sans-serif", 16)))?;
        let x = |v: f64| LEFT + (v.clamp(0.0, 1.0) * f64::from(WIDTH)).round() as i32;
        let top = 50;
        for t in 0..=4 {
            let v = f64::from(t) / 4.0;
            let bottom = top + ROW * self.0.len() as i32;
            root.draw(&PathElement::new(
                vec![(x(v), top - 4), (x(v), bottom)],
                RGBColor(220, 220, 220),
            ))?;
            root.draw(&Text::new(format!("{v:.2}"), (x(v) - 12, bottom + 6), ("sans-serif", 11)))?;
        }
        for (i, s) in self.0.iter().enumerate() {
            let y = top + i as i32 * ROW;
            root.draw(&Text::new(s.method.as_str(), (8, y + 4), ("sans-serif", 12)))?;
            if s.win_rate.is_finite() {
                let bar = [(x(0.0), y + 3), (x(s.win_rate), y + ROW - 5)];
                root.draw(&Rectangle::new(bar, RGBColor(70, 130, 180).filled()))?;
            }
            let (lo, hi) = s.interval;
            if lo.is_finite() && hi.is_finite() {
                let mid = y + ROW / 2 - 1;
                root.draw(&PathElement::new(
                    vec![(x(lo), mid), (x(hi), mid)],
                    BLACK.stroke_width(2),
                ))?;
            }
        }
        Ok(())
    }
}
