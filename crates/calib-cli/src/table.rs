//! [`Table`]: rows of cells printed aligned or as CSV, and [`metric_table`], a report as one.

use calib_core::Report;
use calib_core::bootstrap::MetricInterval;

/// A table with a header row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Column titles.
    pub header: Vec<String>,
    /// Rows of cells (as many as the header).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these titles.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Self { header: header.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    /// Appends a row.
    pub fn push<S: Into<String>>(&mut self, row: impl IntoIterator<Item = S>) {
        self.rows.push(row.into_iter().map(Into::into).collect());
    }

    /// Aligned text: the first column left-aligned, the others right-aligned, two spaces apart.
    pub fn render(&self) -> String {
        let n = self.header.len();
        let width: Vec<usize> = (0..n)
            .map(|j| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .map(|r| r.get(j).map_or(0, |c| c.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |r: &Vec<String>| {
            let cells: Vec<String> = (0..n)
                .map(|j| {
                    let c = r.get(j).map_or("", String::as_str);
                    if j == 0 {
                        format!("{c:<w$}", w = width[j])
                    } else {
                        format!("{c:>w$}", w = width[j])
                    }
                })
                .collect();
            cells.join("  ").trim_end().to_string()
        };
        let mut out = line(&self.header);
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r));
            out.push('\n');
        }
        out
    }

    /// CSV with the header as the first record.
    pub fn to_csv(&self) -> String {
        let mut writer = csv::Writer::from_writer(Vec::new());
        for r in std::iter::once(&self.header).chain(&self.rows) {
            writer.write_record(r).expect("writing to memory");
        }
        String::from_utf8(writer.into_inner().expect("flushing to memory")).expect("utf-8 cells")
    }
}

/// A metric value for a table cell.
pub fn number(v: f64) -> String {
    format!("{v:.6}")
}

/// `metric, value` rows of a report (and `lo, hi` with bootstrap intervals), values written
/// by `show`.
pub fn metric_table(
    report: &Report,
    intervals: &[MetricInterval],
    show: fn(f64) -> String,
) -> Table {
    if intervals.is_empty() {
        let mut table = Table::new(["metric", "value"]);
        for (name, value) in report.named_values() {
            table.push([name, show(value)]);
        }
        return table;
    }
    let mut table = Table::new(["metric", "value", "lo", "hi"]);
    for i in intervals {
        table.push([i.name.clone(), show(i.estimate), show(i.lower), show(i.upper)]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_and_writes_csv() {
        let mut t = Table::new(["metric", "value"]);
        t.push(["ece", "0.5"]);
        t.push(["accuracy", "0.25"]);
        assert_eq!(t.render(), "metric    value\nece         0.5\naccuracy   0.25\n");
        assert_eq!(t.to_csv(), "metric,value\nece,0.5\naccuracy,0.25\n");
    }
}
