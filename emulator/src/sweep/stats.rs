//! A cell's values over its seeds: mean, sample standard deviation and the
//! 95 % confidence interval of the mean by Student's t, as simulator papers
//! report "the mean of n seeds with 95 % confidence intervals".

/// Two-sided 97.5 % quantiles of Student's t for 1 to 30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// Beyond 30: (degrees of freedom, quantile), the normal's 1.960 at infinity.
const T975_TAIL: [(f64, f64); 4] = [(30.0, 2.042), (40.0, 2.021), (60.0, 2.000), (120.0, 1.980)];

/// The 97.5 % quantile of Student's t with `df` degrees of freedom (`df`
/// ≥ 1): the table to 30, then linear in 1/df between 30, 40, 60, 120 and
/// infinity (accurate to 0.001).
pub fn t975(df: usize) -> f64 {
    if df == 0 {
        return f64::NAN;
    }
    if df <= 30 {
        return T975[df - 1];
    }
    let x = 1.0 / df as f64;
    let mut prev = T975_TAIL[0];
    for &(d, t) in &T975_TAIL[1..] {
        if df as f64 <= d {
            let (x0, x1) = (1.0 / prev.0, 1.0 / d);
            return prev.1 + (t - prev.1) * (x0 - x) / (x0 - x1);
        }
        prev = (d, t);
    }
    let x0 = 1.0 / prev.0;
    prev.1 + (1.960 - prev.1) * (x0 - x) / x0
}

/// What a cell's values summarise to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1); NaN for one value.
    pub sd: f64,
    /// 95 % confidence interval of the mean; NaN bounds for one value.
    pub ci_low: f64,
    pub ci_high: f64,
    pub min: f64,
    pub max: f64,
}

/// The summary of `values` (finite ones), `None` when there are none.
pub fn summarise(values: &[f64]) -> Option<Summary> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let n = v.len();
    if n == 0 {
        return None;
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    let sd = match n {
        1 => f64::NAN,
        _ => (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt(),
    };
    let half = t975(n.saturating_sub(1)) * sd / (n as f64).sqrt();
    Some(Summary {
        n,
        mean,
        sd,
        ci_low: mean - half,
        ci_high: mean + half,
        min: v.iter().copied().fold(f64::INFINITY, f64::min),
        max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_seeds_give_the_t_interval() {
        let s = summarise(&[1.0, 2.0, 3.0]).expect("values");
        assert_eq!((s.n, s.mean, s.sd, s.min, s.max), (3, 2.0, 1.0, 1.0, 3.0));
        let half = 4.303 / 3f64.sqrt();
        assert!((s.ci_low - (2.0 - half)).abs() < 1e-12);
        assert!((s.ci_high - (2.0 + half)).abs() < 1e-12);
    }

    #[test]
    fn one_value_has_no_spread_and_none_has_no_summary() {
        let s = summarise(&[5.0, f64::NAN]).expect("one");
        assert_eq!((s.n, s.mean), (1, 5.0));
        assert!(s.sd.is_nan() && s.ci_low.is_nan());
        assert_eq!(summarise(&[]), None);
    }

    #[test]
    fn t_quantiles_fall_towards_the_normal() {
        assert_eq!(t975(1), 12.706);
        assert_eq!(t975(30), 2.042);
        assert!((t975(40) - 2.021).abs() < 1e-12);
        assert!((t975(50) - 2.009).abs() < 0.001, "{}", t975(50));
        assert!((t975(1000) - 1.962).abs() < 0.001, "{}", t975(1000));
        let mut last = f64::INFINITY;
        for df in 1..500 {
            assert!(t975(df) <= last, "not decreasing at {df}");
            last = t975(df);
        }
        assert!(t975(0).is_nan());
    }
}
