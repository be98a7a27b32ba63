//! The study's heatmap: one panel per bin count, a row per method and a column per GCE variant,
//! each cell the method's rank under that variant (1 best, green, to last, red).

use std::path::Path;

use calib_core::metrics::GceVariant;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::render::{DrawResult, Drawing, write_image};
use crate::error::Result;
use crate::study::Study;

/// Pixels per cell (width, height) and the room left of the panels for method names.
const CELL: (u32, u32) = (30, 20);
const LEFT: u32 = 150;

/// Draws `study`'s ranks to `path` (`.svg` or `.png`).
///
/// # Errors
/// [`crate::error::CliError::Output`] for other extensions or when writing fails.
pub fn render_heatmap(study: &Study, path: &Path) -> Result<()> {
    let rows = study.methods.len() as u32;
    let panel = rows * CELL.1 + 50;
    let size = (LEFT + 32 * CELL.0 + 20, 50 + panel * study.bins.len() as u32 + 30);
    write_image(path, size, &Heatmap(study))
}

struct Heatmap<'a>(&'a Study);

impl Drawing for Heatmap<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB::ErrorType> {
        let study = self.0;
        root.fill(&WHITE)?;
        let title = "rank of each method under the 32 GCE variants (1 = best)";
        root.draw(&Text::new(title, (LEFT as i32, 15), ("sans-serif", 18)))?;
        let panel = study.methods.len() as i32 * CELL.1 as i32 + 50;
        for (b, bins) in study.bins.iter().enumerate() {
            let top = 50 + b as i32 * panel;
            let label = format!("{bins} bins / ranges");
            root.draw(&Text::new(label, (LEFT as i32, top), ("sans-serif", 13)))?;
            draw_panel(root, study, b, top + 34)?;
        }
        Ok(())
    }
}

/// The cells of bin count index `b`, their top edge at `top`.
fn draw_panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    study: &Study,
    b: usize,
    top: i32,
) -> DrawResult<DB::ErrorType> {
    let n = study.methods.len();
    let (w, h) = (CELL.0 as i32, CELL.1 as i32);
    for (m, name) in study.methods.iter().enumerate() {
        let y = top + m as i32 * h;
        root.draw(&Text::new(name.as_str(), (8, y + 4), ("sans-serif", 12)))?;
    }
    for v in GceVariant::all() {
        let x = LEFT as i32 + v.number() as i32 * w;
        let number = format!("{}", v.number());
        root.draw(&Text::new(number, (x + 8, top - 14), ("sans-serif", 11)))?;
        for (rank, &m) in study.ranking(b, v).iter().enumerate() {
            let y = top + m as i32 * h;
            let t = if n > 1 { rank as f64 / (n - 1) as f64 } else { 0.0 };
            let colour = RGBColor((40.0 + 200.0 * t) as u8, (170.0 - 120.0 * t) as u8, 70);
            root.draw(&Rectangle::new([(x, y), (x + w - 1, y + h - 1)], colour.filled()))?;
            let text = format!("{}", rank + 1);
            root.draw(&Text::new(
                text,
                (x + 8, y + 4),
                ("sans-serif", 11).into_font().color(&WHITE),
            ))?;
        }
    }
    Ok(())
}
