//! [`Draw`]: one random draw for one wait, or none. The ladder reads it, a [`Clock`](crate::Clock)
//! makes it, a testing scope fixes it.

/// One random draw for one wait, uniform over [0, 1), or the absence of jitter.
///
/// The n-th wait depends only on n and its own draw, never on earlier draws, so a run with
/// recorded draws is reproducible.
///
/// ```
/// use retry_runtime::Draw;
/// assert_eq!(Draw::from_unit(0.5), Draw::from_bits(1 << 31));
/// assert_eq!(Draw::from_unit(7.0), Draw::from_bits(u32::MAX)); // clamped below 1
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Draw(Option<u32>);

impl Draw {
    /// The 32 random bits, or `None` for no jitter.
    pub(crate) const fn bits(self) -> Option<u32> {
        self.0
    }

    /// No jitter: every wait is its ideal, whatever the policy's jitter says.
    pub const IDEAL: Draw = Draw(None);

    /// A draw from 32 uniform random bits: `bits / 2^32`.
    pub const fn from_bits(bits: u32) -> Draw {
        Draw(Some(bits))
    }

    /// A draw from a number in [0, 1); values outside are clamped into it, NaN reads as 0.
    pub const fn from_unit(unit: f64) -> Draw {
        // Float-to-int casts saturate (and NaN becomes 0), so any input maps into u32.
        let scaled = unit * 4_294_967_296.0;
        Draw(Some(if scaled >= 4_294_967_295.0 {
            u32::MAX
        } else {
            scaled as u32
        }))
    }
}
