//! The report's plots: line charts, grouped bars and the utilisation heat
//! map, drawn by plotters into self-contained SVG strings.

use plotters::prelude::*;

use super::data::{Heat, ReportError};

const W: u32 = 760;
const H: u32 = 380;

fn color(i: usize) -> RGBColor {
    let (r, g, b) = Palette99::pick(i).to_rgba().rgb();
    RGBColor(r, g, b)
}

fn draw_err(plot: &str, e: impl std::fmt::Display) -> ReportError {
    ReportError::Draw {
        plot: plot.into(),
        message: e.to_string(),
    }
}

/// Runs a drawing closure on an SVG string backend.
fn svg(
    plot: &str,
    size: (u32, u32),
    draw: impl FnOnce(DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> Result<(), String>,
) -> Result<String, ReportError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err(plot, e))?;
        draw(root.clone()).map_err(|e| draw_err(plot, e))?;
        root.present().map_err(|e| draw_err(plot, e))?;
    }
    Ok(out)
}

fn upper(values: impl Iterator<Item = f64>) -> f64 {
    let m = values.filter(|v| v.is_finite()).fold(0.0f64, f64::max);
    if m > 0.0 { m * 1.05 } else { 1.0 }
}

/// Line series, one per run, over shared axes.
pub(crate) fn lines_plot(
    plot: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<String, ReportError> {
    let x_max = upper(series.iter().flat_map(|s| s.1.iter().map(|p| p.0)));
    let y_max = upper(series.iter().flat_map(|s| s.1.iter().map(|p| p.1)));
    svg(plot, (W, H), |root| {
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, (label, points)) in series.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .map_err(|e| e.to_string())?;
        Ok(())
    })
}

/// One series of a sweep's figure: its label and, per x, the mean with
/// the ends of its confidence interval.
pub(crate) type CiSeries = (String, Vec<(f64, f64, f64, f64)>);

/// Means joined by lines, each with its 95 % confidence interval as a
/// vertical bar (`dcemu sweep`'s report); `x_ticks` names the x positions
/// of a categorical axis (empty for a numeric one).
pub(crate) fn ci_plot(
    plot: &str,
    x_desc: &str,
    y_desc: &str,
    x_ticks: &[String],
    series: &[CiSeries],
) -> Result<String, ReportError> {
    let points = || series.iter().flat_map(|s| s.1.iter());
    let finite = |v: f64| v.is_finite().then_some(v);
    let x_min = points().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x_max = points().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let (x_min, x_max) = match (finite(x_min), finite(x_max)) {
        (Some(a), Some(b)) if b > a => (a - (b - a) * 0.05, b + (b - a) * 0.05),
        (Some(a), _) => (a - 1.0, a + 1.0),
        _ => (0.0, 1.0),
    };
    let lows = points().flat_map(|p| [p.1, p.2]).filter(|v| v.is_finite());
    let y_min = lows.fold(0.0f64, f64::min);
    let y_max = upper(points().flat_map(|p| [p.1, p.3]));
    let y_min = if y_min < 0.0 { y_min * 1.05 } else { 0.0 };
    let ticks = x_ticks.to_vec();
    svg(plot, (W, H), |root| {
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x_min..x_max, y_min..y_max)
            .map_err(|e| e.to_string())?;
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(x_desc).y_desc(y_desc);
        let label = |x: &f64| {
            let i = x.round();
            match (i - x).abs() < 1e-9 && i >= 0.0 {
                true => ticks.get(i as usize).cloned().unwrap_or_default(),
                false => String::new(),
            }
        };
        if !ticks.is_empty() {
            mesh.x_labels(ticks.len()).x_label_formatter(&label);
        }
        mesh.draw().map_err(|e| e.to_string())?;
        for (i, (name, pts)) in series.iter().enumerate() {
            let c = color(i);
            let line: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.1)).collect();
            chart
                .draw_series(LineSeries::new(line, c.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
            chart
                .draw_series(
                    pts.iter()
                        .filter(|p| p.2.is_finite() && p.3.is_finite())
                        .map(|p| ErrorBar::new_vertical(p.0, p.2, p.1, p.3, c.stroke_width(1), 8)),
                )
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(pts.iter().map(|p| Circle::new((p.0, p.1), 3, c.filled())))
                .map_err(|e| e.to_string())?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| e.to_string())?;
        Ok(())
    })
}

/// Height of the plotting area of a bar chart, px (`H` less the margins
/// and the category labels), and of its legend's rows.
const BARS_PLOT_PX: f64 = H as f64 - 2.0 * 12.0 - 40.0;
const LEGEND_ROW_PX: f64 = 22.0;

/// The top of a bar chart's y axis for bars up to `y_max` and a legend of
/// `runs` rows in the upper right: the legend gets headroom of its own
/// above the tallest bar, so that it never covers one (issue 40).
fn with_legend_room(y_max: f64, runs: usize) -> f64 {
    let legend_px = LEGEND_ROW_PX * runs as f64 + 16.0;
    y_max / (1.0 - (legend_px / BARS_PLOT_PX).min(0.6))
}

/// Grouped bars: one group per category, one bar per run.
pub(crate) fn bars_plot(
    plot: &str,
    y_desc: &str,
    categories: &[String],
    runs: &[String],
    value: impl Fn(usize, usize) -> Option<f64>,
) -> Result<String, ReportError> {
    let n = runs.len().max(1) as f64;
    let y_max = upper((0..categories.len()).flat_map(|c| {
        (0..runs.len())
            .filter_map(|r| value(c, r))
            .collect::<Vec<_>>()
    }));
    let y_top = with_legend_room(y_max, runs.len());
    svg(plot, (W, H), |root| {
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..categories.len() as f64, 0f64..y_top)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(y_desc)
            .draw()
            .map_err(|e| e.to_string())?;
        // Category names under the middle of their group.
        let style = TextStyle::from(("sans-serif", 13).into_font()).pos(
            plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Top,
            ),
        );
        for (i, name) in categories.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
            root.draw(&Text::new(name.clone(), (px, py + 8), style.clone()))
                .map_err(|e| e.to_string())?;
        }
        for (r, label) in runs.iter().enumerate() {
            let c = color(r);
            let bars: Vec<_> = (0..categories.len())
                .filter_map(|cat| {
                    let v = value(cat, r)?;
                    let x0 = cat as f64 + 0.1 + 0.8 * r as f64 / n;
                    let x1 = x0 + 0.8 / n;
                    Some(Rectangle::new([(x0, 0.0), (x1, v)], c.filled()))
                })
                .collect();
            chart
                .draw_series(bars)
                .map_err(|e| e.to_string())?
                .label(label.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| e.to_string())?;
        Ok(())
    })
}

/// Heat map of one run: server groups (rows) × time bins, white to dark.
pub(super) fn heat_plot(plot: &str, heat: &Heat) -> Result<String, ReportError> {
    let rows = heat.rows.len();
    let bins = heat.values.first().map_or(0, Vec::len);
    let end = heat.bin_s * bins as f64;
    let last_server = heat.rows.last().map_or(0, |r| r.1);
    svg(plot, (W, H), |root| {
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..end, 0f64..(last_server + 1) as f64)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("virtual time (s)")
            .y_desc("server")
            .draw()
            .map_err(|e| e.to_string())?;
        let cells = (0..rows).flat_map(|r| {
            let (lo, hi) = heat.rows[r];
            (0..bins).map(move |b| {
                let u = heat.values[r][b].clamp(0.0, 1.0);
                let shade = |full: f64| (255.0 - (255.0 - full) * u) as u8;
                let c = RGBColor(shade(8.0), shade(48.0), shade(107.0));
                Rectangle::new(
                    [
                        (b as f64 * heat.bin_s, lo as f64),
                        ((b + 1) as f64 * heat.bin_s, (hi + 1) as f64),
                    ],
                    c.filled(),
                )
            })
        });
        chart.draw_series(cells).map_err(|e| e.to_string())?;
        Ok(())
    })
}

/// At most `n` points of an empirical CDF of sorted values.
pub(super) fn cdf_points(sorted: &[f64], n: usize) -> Vec<(f64, f64)> {
    if sorted.is_empty() {
        return Vec::new();
    }
    let len = sorted.len();
    let step = len.div_ceil(n).max(1);
    let mut pts: Vec<(f64, f64)> = (0..len)
        .step_by(step)
        .map(|i| (sorted[i], (i + 1) as f64 / len as f64))
        .collect();
    pts.push((sorted[len - 1], 1.0));
    pts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tallest bar ends below the legend's rows, for 1 to 6 runs.
    #[test]
    fn the_legend_sits_above_the_tallest_bar() {
        for runs in 1..=6 {
            let top = with_legend_room(10.0, runs);
            let bar_px = BARS_PLOT_PX * 10.0 / top;
            let legend_px = LEGEND_ROW_PX * runs as f64 + 16.0;
            assert!(bar_px + legend_px <= BARS_PLOT_PX + 1e-9, "{runs} runs");
        }
    }
}
