//! Drawing a [`ReliabilityDiagram`] with plotters: accuracy bars against confidence with the
//! diagonal, the gap to it, binomial acceptance intervals, and a histogram of counts beneath.
//! SVG or PNG (no system libraries: the font is embedded), written atomically.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::CurveOverlay;
use super::diagram::ReliabilityDiagram;
use crate::error::{CliError, Result};
use crate::io::write_file;

/// Image size in pixels.
pub const SIZE: (u32, u32) = (800, 760);

/// DejaVu Sans (Bitstream Vera license, see `assets/DejaVuSans.LICENSE`).
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok()
    });
    if ok { Ok(()) } else { Err(CliError::Usage("the embedded font could not be loaded".into())) }
}

/// Renders `diagram` titled `title` to `path` (`.svg` or `.png`).
///
/// # Errors
/// [`CliError::Output`] for other extensions or when writing fails.
pub fn render(diagram: &ReliabilityDiagram, title: &str, path: &Path) -> Result<()> {
    struct Diagram<'a>(&'a ReliabilityDiagram, &'a str);
    impl Drawing for Diagram<'_> {
        fn draw<DB: DrawingBackend>(
            &self,
            root: &DrawingArea<DB, Shift>,
        ) -> DrawResult<DB::ErrorType> {
            draw(root, self.0, self.1)
        }
    }
    write_image(path, SIZE, &Diagram(diagram, title))
}

/// A picture that can be drawn on any plotters backend.
pub(super) trait Drawing {
    /// Draws onto `root`.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB::ErrorType>;
}

/// Draws `drawing` at `size` pixels and writes it to `path` (`.svg` or `.png`, atomically).
///
/// # Errors
/// [`CliError::Output`] for other extensions or when writing fails.
pub(super) fn write_image(path: &Path, size: (u32, u32), drawing: &impl Drawing) -> Result<()> {
    register_font()?;
    let fail = |e: &dyn std::fmt::Display| CliError::output(path.display(), e);
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("svg") => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
                drawing.draw(&root).map_err(|e| fail(&e))?;
                root.present().map_err(|e| fail(&e))?;
            }
            Ok(write_file(path, svg.as_bytes())?)
        }
        Some("png") => {
            let (w, h) = size;
            let mut rgb = vec![0u8; (w * h * 3) as usize];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
                drawing.draw(&root).map_err(|e| fail(&e))?;
                root.present().map_err(|e| fail(&e))?;
            }
            let mut png_bytes = Vec::new();
            {
                let mut encoder = png::Encoder::new(&mut png_bytes, w, h);
                encoder.set_color(png::ColorType::Rgb);
                encoder.set_depth(png::BitDepth::Eight);
                let mut writer = encoder.write_header().map_err(|e| fail(&e))?;
                writer.write_image_data(&rgb).map_err(|e| fail(&e))?;
            }
            Ok(write_file(path, &png_bytes)?)
        }
        _ => Err(fail(&"the image must end in .svg or .png")),
    }
}

pub(super) type DrawResult<E> = std::result::Result<(), DrawingAreaErrorKind<E>>;

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    d: &ReliabilityDiagram,
    title: &str,
) -> DrawResult<DB::ErrorType> {
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(SIZE.1 * 70 / 100);
    draw_reliability(&top, d, title)?;
    draw_counts(&bottom, d)
}

/// Accuracy per bin against the diagonal, the gap to it, and each bin's acceptance interval.
fn draw_reliability<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    d: &ReliabilityDiagram,
    title: &str,
) -> DrawResult<DB::ErrorType> {
    let bar = RGBColor(70, 110, 200);
    let gap = RGBColor(220, 60, 50);
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(30)
        .y_label_area_size(55)
        .build_cartesian_2d(0f64..1f64, 0f64..1f64)?;
    chart
        .configure_mesh()
        .x_labels(11)
        .y_labels(11)
        .y_desc("accuracy")
        .label_style(("sans-serif", 13))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    let bars = d.bins.iter().filter_map(|b| Some((b, b.accuracy?, b.confidence?)));
    chart
        .draw_series(bars.clone().map(|(b, acc, _)| {
            Rectangle::new([(b.lower, 0.0), (b.upper, acc)], bar.mix(0.75).filled())
        }))?
        .label("accuracy")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], bar.filled()));
    chart
        .draw_series(bars.clone().map(|(b, acc, conf)| {
            Rectangle::new([(b.lower, acc), (b.upper, conf)], gap.mix(0.35).filled())
        }))?
        .label("gap to calibration")
        .legend(move |(x, y)| {
            Rectangle::new([(x, y - 5), (x + 14, y + 5)], gap.mix(0.35).filled())
        });
    chart
        .draw_series(DashedLineSeries::new(
            [(0.0, 0.0), (1.0, 1.0)],
            6,
            4,
            BLACK.mix(0.6).stroke_width(1),
        ))?
        .label("perfect calibration")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], BLACK.mix(0.6)));
    chart
        .draw_series(d.bins.iter().filter_map(|b| {
            let (lo, hi) = b.interval?;
            let x = b.confidence?;
            Some(PathElement::new([(x, lo), (x, hi)], BLACK.stroke_width(2)))
        }))?
        .label(d.acceptance_label.as_str())
        .legend(|(x, y)| PathElement::new([(x + 7, y - 6), (x + 7, y + 6)], BLACK.stroke_width(2)));
    if let Some(overlay) = &d.curve {
        draw_curve(&mut chart, overlay)?;
    }
    if let Some(label) = &d.accuracy_label {
        let green = RGBColor(20, 130, 60);
        // At the bar's centre, beside the acceptance interval (drawn at the mean confidence).
        chart
            .draw_series(d.bins.iter().filter_map(|b| {
                let (lo, hi) = b.accuracy_interval?;
                let x = (b.lower + b.upper) / 2.0;
                Some(PathElement::new([(x, lo), (x, hi)], green.stroke_width(3)))
            }))?
            .label(label.as_str())
            .legend(move |(x, y)| {
                PathElement::new([(x + 7, y - 6), (x + 7, y + 6)], green.stroke_width(3))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 13))
        .draw()
}

/// The continuous reliability curve over the bars, and its bootstrap band beneath it.
fn draw_curve<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    overlay: &CurveOverlay,
) -> DrawResult<DB::ErrorType> {
    let purple = RGBColor(120, 40, 160);
    let grid = &overlay.curve.grid;
    if let (Some(band), Some(label)) = (&overlay.band, &overlay.band_label) {
        let upper = grid.iter().zip(&band.upper);
        let lower = grid.iter().zip(&band.lower).rev();
        let outline: Vec<(f64, f64)> = upper.chain(lower).map(|(&x, &y)| (x, y)).collect();
        chart
            .draw_series(std::iter::once(Polygon::new(outline, purple.mix(0.18).filled())))?
            .label(label.as_str())
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 14, y + 5)], purple.mix(0.18).filled())
            });
    }
    let line = grid.iter().zip(&overlay.curve.reliability).map(|(&x, &y)| (x, y));
    chart
        .draw_series(LineSeries::new(line, purple.stroke_width(1)))?
        .label(overlay.label.as_str())
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 14, y)], purple.stroke_width(2)));
    Ok(())
}

/// The count per bin, on a log scale.
fn draw_counts<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    d: &ReliabilityDiagram,
) -> DrawResult<DB::ErrorType> {
    let max_count = d.bins.iter().map(|b| b.count).fold(1.0, f64::max);
    let mut hist = ChartBuilder::on(area)
        .margin(14)
        .margin_top(0)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(0f64..1f64, (0.8f64..max_count * 1.5).log_scale())?;
    hist.configure_mesh()
        .x_labels(11)
        .y_labels(5)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_desc(d.x_label.as_str())
        .y_desc("count (log scale)")
        .label_style(("sans-serif", 13))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    hist.draw_series(d.bins.iter().filter(|b| b.count > 0.0).map(|b| {
        let grey = RGBColor(120, 120, 120).mix(0.7).filled();
        Rectangle::new([(b.lower, 0.8), (b.upper, b.count)], grey)
    }))?;
    Ok(())
}
