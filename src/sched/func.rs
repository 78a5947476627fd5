//! The local transformations of GOAL `exec` actions (the GOAL paper, Sec. III-A): the predefined
//! element-wise functions `max min sum prod land lor lxor band bor bxor copy` over
//! `Int/UInt/Float 8/16/32/64`, and user functions named by number. `apply` computes
//! `dst[i] = src[i] op dst[i]`, the argument order of `MPI_Reduce_local(inbuf, inoutbuf)` and
//! of the paper's Listing 3 (`exec op with buf[w-1], buf[w]` leaves the result in `buf[w]`).
//! Pure code on byte slices in native byte order; user functions belong to whoever runs the
//! schedule.

use std::fmt;

/// The operation of a predefined function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Opcode {
    Max,
    Min,
    Sum,
    Prod,
    Land,
    Lor,
    Lxor,
    Band,
    Bor,
    Bxor,
    Copy,
}

impl Opcode {
    pub const ALL: [Opcode; 11] = [
        Opcode::Max,
        Opcode::Min,
        Opcode::Sum,
        Opcode::Prod,
        Opcode::Land,
        Opcode::Lor,
        Opcode::Lxor,
        Opcode::Band,
        Opcode::Bor,
        Opcode::Bxor,
        Opcode::Copy,
    ];

    /// The name used in GOAL text (`sum` in `sumInt32`).
    pub fn name(self) -> &'static str {
        match self {
            Opcode::Max => "max",
            Opcode::Min => "min",
            Opcode::Sum => "sum",
            Opcode::Prod => "prod",
            Opcode::Land => "land",
            Opcode::Lor => "lor",
            Opcode::Lxor => "lxor",
            Opcode::Band => "band",
            Opcode::Bor => "bor",
            Opcode::Bxor => "bxor",
            Opcode::Copy => "copy",
        }
    }

    pub fn from_name(s: &str) -> Option<Opcode> {
        Opcode::ALL.into_iter().find(|o| o.name() == s)
    }

    fn is_bitwise(self) -> bool {
        matches!(self, Opcode::Band | Opcode::Bor | Opcode::Bxor)
    }
}

/// The element type of a predefined function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    /// IEEE 754 binary16, computed in f32 and rounded back to nearest-even.
    Float16,
    Float32,
    Float64,
}

impl Dtype {
    pub const ALL: [Dtype; 11] = [
        Dtype::Int8,
        Dtype::Int16,
        Dtype::Int32,
        Dtype::Int64,
        Dtype::UInt8,
        Dtype::UInt16,
        Dtype::UInt32,
        Dtype::UInt64,
        Dtype::Float16,
        Dtype::Float32,
        Dtype::Float64,
    ];

    /// The name used in GOAL text (`Int32` in `sumInt32`).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Int8 => "Int8",
            Dtype::Int16 => "Int16",
            Dtype::Int32 => "Int32",
            Dtype::Int64 => "Int64",
            Dtype::UInt8 => "UInt8",
            Dtype::UInt16 => "UInt16",
            Dtype::UInt32 => "UInt32",
            Dtype::UInt64 => "UInt64",
            Dtype::Float16 => "Float16",
            Dtype::Float32 => "Float32",
            Dtype::Float64 => "Float64",
        }
    }

    pub fn from_name(s: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name() == s)
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::Int8 | Dtype::UInt8 => 1,
            Dtype::Int16 | Dtype::UInt16 | Dtype::Float16 => 2,
            Dtype::Int32 | Dtype::UInt32 | Dtype::Float32 => 4,
            Dtype::Int64 | Dtype::UInt64 | Dtype::Float64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Dtype::Float16 | Dtype::Float32 | Dtype::Float64)
    }
}

/// A predefined operation on one element type. Construct with `Predef::new`, which rejects the
/// combinations without a meaning (bitwise operations on floating-point types).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Predef {
    op: Opcode,
    ty: Dtype,
}

impl Predef {
    pub fn new(op: Opcode, ty: Dtype) -> Option<Predef> {
        (!(op.is_bitwise() && ty.is_float())).then_some(Predef { op, ty })
    }
    pub fn op(self) -> Opcode {
        self.op
    }
    pub fn ty(self) -> Dtype {
        self.ty
    }
}

/// The function of an `exec` action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Func {
    Predef(Predef),
    /// `user N`: the N-th function registered with the schedule's owner, called as
    /// `f(src, src_len, dst, dst_len)`.
    User(u16),
}

impl Func {
    /// A function by its GOAL name: `sumInt32` (or `sum Int32`), `user N`. Bitwise
    /// operations on Float types (and Float8, which has no format) have none.
    pub fn from_name(name: &str) -> Option<Func> {
        let name = name.trim();
        if let Some(n) = name.strip_prefix("user") {
            let n = n.trim();
            if n.len() == name.len() - 4 && !n.is_empty() {
                return None; // `user7`: the number needs a space
            }
            return n.parse::<u16>().ok().map(Func::User);
        }
        let op = Opcode::ALL
            .into_iter()
            .find(|o| name.starts_with(o.name()))?;
        let ty = Dtype::from_name(name[op.name().len()..].trim_start())?;
        Predef::new(op, ty).map(Func::Predef)
    }
}

impl fmt::Display for Func {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Func::Predef(p) => write!(f, "{}{}", p.op.name(), p.ty.name()),
            Func::User(n) => write!(f, "user {n}"),
        }
    }
}

/// Why `apply` refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FuncError {
    /// Predefined functions need buffers of the same length, a whole number of elements.
    Length { src: usize, dst: usize, elem: usize },
    /// User functions are not computed here.
    User(u16),
}

impl fmt::Display for FuncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FuncError::Length { src, dst, elem } => write!(
                f,
                "buffers of {src} and {dst} bytes: a predefined function needs equal lengths, \
                 a multiple of the {elem}-byte element"
            ),
            FuncError::User(n) => write!(f, "user function {n} is not predefined"),
        }
    }
}

impl std::error::Error for FuncError {}

/// Checks the lengths a predefined function needs (equal, a whole number of elements).
pub fn check_lengths(p: Predef, src: usize, dst: usize) -> Result<(), FuncError> {
    let elem = p.ty.size();
    if src != dst || src % elem != 0 {
        return Err(FuncError::Length { src, dst, elem });
    }
    Ok(())
}

/// `dst[i] = src[i] op dst[i]` element-wise (for `copy`: `dst = src`). Integers wrap; logical
/// operations yield 1 or 0 of the element type. The loops are plain element-wise loops over
/// fixed-size chunks, which the compiler vectorises.
pub fn apply(func: Func, src: &[u8], dst: &mut [u8]) -> Result<(), FuncError> {
    let p = match func {
        Func::Predef(p) => p,
        Func::User(n) => return Err(FuncError::User(n)),
    };
    check_lengths(p, src.len(), dst.len())?;
    if p.op == Opcode::Copy {
        dst.copy_from_slice(src);
        return Ok(());
    }
    macro_rules! int {
        ($t:ty) => {
            elementwise::<$t, { std::mem::size_of::<$t>() }>(src, dst, |a, b| int_op(p.op, a, b))
        };
    }
    match p.ty {
        Dtype::Int8 => int!(i8),
        Dtype::Int16 => int!(i16),
        Dtype::Int32 => int!(i32),
        Dtype::Int64 => int!(i64),
        Dtype::UInt8 => int!(u8),
        Dtype::UInt16 => int!(u16),
        Dtype::UInt32 => int!(u32),
        Dtype::UInt64 => int!(u64),
        Dtype::Float16 => elementwise::<Half, 2>(src, dst, |a, b| {
            Half::from_f32(float_op(p.op, a.to_f32(), b.to_f32()))
        }),
        Dtype::Float32 => elementwise::<f32, 4>(src, dst, |a, b| float_op(p.op, a, b)),
        Dtype::Float64 => elementwise::<f64, 8>(src, dst, |a, b| float_op(p.op, a, b)),
    }
    Ok(())
}

/// A type that lives in `N` native-order bytes.
trait Elem<const N: usize>: Copy {
    fn load(b: [u8; N]) -> Self;
    fn store(self) -> [u8; N];
}

macro_rules! elem {
    ($($t:ty),*) => {$(
        impl Elem<{ std::mem::size_of::<$t>() }> for $t {
            fn load(b: [u8; std::mem::size_of::<$t>()]) -> Self {
                <$t>::from_ne_bytes(b)
            }
            fn store(self) -> [u8; std::mem::size_of::<$t>()] {
                self.to_ne_bytes()
            }
        }
    )*};
}
elem!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

fn elementwise<T: Elem<N>, const N: usize>(src: &[u8], dst: &mut [u8], f: impl Fn(T, T) -> T) {
    for (s, d) in src.chunks_exact(N).zip(dst.chunks_exact_mut(N)) {
        let a = T::load(s.try_into().expect("chunk of N bytes"));
        let b = T::load((&*d).try_into().expect("chunk of N bytes"));
        d.copy_from_slice(&f(a, b).store());
    }
}

trait Int: Copy + Ord + Default {
    const ONE: Self;
    fn wadd(self, o: Self) -> Self;
    fn wmul(self, o: Self) -> Self;
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
}

macro_rules! int_impl {
    ($($t:ty),*) => {$(
        impl Int for $t {
            const ONE: Self = 1;
            fn wadd(self, o: Self) -> Self { self.wrapping_add(o) }
            fn wmul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn and(self, o: Self) -> Self { self & o }
            fn or(self, o: Self) -> Self { self | o }
            fn xor(self, o: Self) -> Self { self ^ o }
        }
    )*};
}
int_impl!(i8, i16, i32, i64, u8, u16, u32, u64);

fn int_op<T: Int>(op: Opcode, a: T, b: T) -> T {
    let zero = T::default();
    let truth = |x: bool| if x { T::ONE } else { zero };
    match op {
        Opcode::Max => a.max(b),
        Opcode::Min => a.min(b),
        Opcode::Sum => a.wadd(b),
        Opcode::Prod => a.wmul(b),
        Opcode::Land => truth(a != zero && b != zero),
        Opcode::Lor => truth(a != zero || b != zero),
        Opcode::Lxor => truth((a != zero) != (b != zero)),
        Opcode::Band => a.and(b),
        Opcode::Bor => a.or(b),
        Opcode::Bxor => a.xor(b),
        Opcode::Copy => a,
    }
}

trait Float: Copy + PartialEq {
    const ZERO: Self;
    const ONE: Self;
    fn fmax(self, o: Self) -> Self;
    fn fmin(self, o: Self) -> Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
}

macro_rules! float_impl {
    ($($t:ty),*) => {$(
        impl Float for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            fn fmax(self, o: Self) -> Self { self.max(o) }
            fn fmin(self, o: Self) -> Self { self.min(o) }
            fn add(self, o: Self) -> Self { self + o }
            fn mul(self, o: Self) -> Self { self * o }
        }
    )*};
}
float_impl!(f32, f64);

fn float_op<T: Float>(op: Opcode, a: T, b: T) -> T {
    let truth = |x: bool| if x { T::ONE } else { T::ZERO };
    match op {
        Opcode::Max => a.fmax(b),
        Opcode::Min => a.fmin(b),
        Opcode::Sum => a.add(b),
        Opcode::Prod => a.mul(b),
        Opcode::Land => truth(a != T::ZERO && b != T::ZERO),
        Opcode::Lor => truth(a != T::ZERO || b != T::ZERO),
        Opcode::Lxor => truth((a != T::ZERO) != (b != T::ZERO)),
        // Predef::new rejects bitwise operations on floats.
        Opcode::Band | Opcode::Bor | Opcode::Bxor | Opcode::Copy => a,
    }
}

/// IEEE 754 binary16 bits. Only conversion is needed: arithmetic happens in f32, which holds
/// every half exactly, and one rounding back gives the correctly rounded half result for sum,
/// prod, max and min.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Half(pub u16);

impl Elem<2> for Half {
    fn load(b: [u8; 2]) -> Self {
        Half(u16::from_ne_bytes(b))
    }
    fn store(self) -> [u8; 2] {
        self.0.to_ne_bytes()
    }
}

impl Half {
    pub fn to_f32(self) -> f32 {
        let h = u32::from(self.0);
        let sign = (h & 0x8000) << 16;
        let exp = (h >> 10) & 0x1f;
        let man = h & 0x3ff;
        let bits = match (exp, man) {
            (0, 0) => sign,
            (0, m) => {
                // Subnormal: value m * 2^-24, exact in f32.
                let v = m as f32 * (1.0 / 16_777_216.0);
                return if sign != 0 { -v } else { v };
            }
            (0x1f, 0) => sign | 0x7f80_0000,
            (0x1f, m) => sign | 0x7fc0_0000 | (m << 13),
            (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
        };
        f32::from_bits(bits)
    }

    /// Round to nearest, ties to even; overflow to infinity; NaN stays NaN.
    pub fn from_f32(v: f32) -> Half {
        let x = v.to_bits();
        let sign = ((x >> 16) & 0x8000) as u16;
        let exp = ((x >> 23) & 0xff) as i32;
        let man = x & 0x7f_ffff;
        if exp == 0xff {
            return Half(sign | 0x7c00 | if man != 0 { 0x200 } else { 0 });
        }
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return Half(sign | 0x7c00);
        }
        if e <= 0 {
            // Subnormal or zero in half: shift the full significand into place.
            if e < -10 {
                return Half(sign);
            }
            let full = man | 0x80_0000;
            let shift = (14 - e) as u32; // 24-bit significand down to the 10-bit field
            let half = full >> shift;
            let rest = full & ((1 << shift) - 1);
            let mid = 1 << (shift - 1);
            let round = rest > mid || (rest == mid && half & 1 == 1);
            return Half(sign | (half + u32::from(round)) as u16);
        }
        let half = ((e as u32) << 10) | (man >> 13);
        let rest = man & 0x1fff;
        let round = rest > 0x1000 || (rest == 0x1000 && half & 1 == 1);
        // A carry out of the mantissa correctly bumps the exponent (up to infinity).
        Half(sign | (half + u32::from(round)) as u16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn predef(op: Opcode, ty: Dtype) -> Func {
        Func::Predef(Predef::new(op, ty).unwrap())
    }

    fn ints<T: Copy>(v: &[T], f: impl Fn(T) -> Vec<u8>) -> Vec<u8> {
        v.iter().flat_map(|&x| f(x)).collect()
    }

    #[test]
    fn sum_into_destination() {
        let src = ints(&[1i32, -2, i32::MAX], |x| x.to_ne_bytes().to_vec());
        let mut dst = ints(&[10i32, 20, 1], |x| x.to_ne_bytes().to_vec());
        apply(predef(Opcode::Sum, Dtype::Int32), &src, &mut dst).unwrap();
        assert_eq!(
            dst,
            ints(&[11i32, 18, i32::MIN], |x| x.to_ne_bytes().to_vec())
        );
    }

    #[test]
    fn every_combination_runs_on_each_type() {
        for op in Opcode::ALL {
            for ty in Dtype::ALL {
                let Some(p) = Predef::new(op, ty) else {
                    assert!(ty.is_float() && op.is_bitwise());
                    continue;
                };
                let n = 3 * ty.size();
                let src: Vec<u8> = (0..n as u8).collect();
                let mut dst: Vec<u8> = (0..n as u8).rev().collect();
                apply(Func::Predef(p), &src, &mut dst).unwrap();
                if op == Opcode::Copy {
                    assert_eq!(dst, src);
                }
                let mut short = vec![0u8; n - 1];
                assert!(
                    apply(Func::Predef(p), &src[..n - 1], &mut short).is_err() || ty.size() == 1
                );
            }
        }
    }

    #[test]
    fn semantics_per_kind() {
        let f = |op, a: u8, b: u8| {
            let mut d = [b];
            apply(predef(op, Dtype::UInt8), &[a], &mut d).unwrap();
            d[0]
        };
        assert_eq!(f(Opcode::Max, 3, 9), 9);
        assert_eq!(f(Opcode::Min, 3, 9), 3);
        assert_eq!(f(Opcode::Prod, 16, 17), 16);
        assert_eq!(f(Opcode::Land, 3, 0), 0);
        assert_eq!(f(Opcode::Lor, 3, 0), 1);
        assert_eq!(f(Opcode::Lxor, 3, 5), 0);
        assert_eq!(f(Opcode::Band, 6, 3), 2);
        assert_eq!(f(Opcode::Bor, 6, 3), 7);
        assert_eq!(f(Opcode::Bxor, 6, 3), 5);
        let mut d = (-1.5f64).to_ne_bytes();
        apply(
            predef(Opcode::Sum, Dtype::Float64),
            &2.25f64.to_ne_bytes(),
            &mut d,
        )
        .unwrap();
        assert_eq!(f64::from_ne_bytes(d), 0.75);
        assert!(Predef::new(Opcode::Band, Dtype::Float32).is_none());
        assert_eq!(apply(Func::User(3), &[], &mut []), Err(FuncError::User(3)));
    }

    #[test]
    fn half_conversions_round_trip_every_value() {
        for bits in 0..=u16::MAX {
            let h = Half(bits);
            let f = h.to_f32();
            if f.is_nan() {
                assert!(Half::from_f32(f).to_f32().is_nan());
            } else {
                assert_eq!(Half::from_f32(f).0, bits, "bits {bits:#06x} -> {f}");
            }
        }
        assert_eq!(Half::from_f32(1.0).0, 0x3c00);
        assert_eq!(Half::from_f32(65504.0).0, 0x7bff);
        assert_eq!(
            Half::from_f32(65520.0).0,
            0x7c00,
            "ties to even overflow to infinity"
        );
        assert_eq!(
            Half::from_f32(1.0 + 1.0 / 2048.0).0,
            0x3c00,
            "tie to even, down"
        );
        assert_eq!(
            Half::from_f32(1.0 + 3.0 / 2048.0).0,
            0x3c02,
            "tie to even, up"
        );
        let mut d = Half::from_f32(1.5).0.to_ne_bytes();
        apply(
            predef(Opcode::Sum, Dtype::Float16),
            &Half::from_f32(2.0).0.to_ne_bytes(),
            &mut d,
        )
        .unwrap();
        assert_eq!(Half(u16::from_ne_bytes(d)).to_f32(), 3.5);
    }

    #[test]
    fn functions_by_name() {
        let p = |op, ty| Some(Func::Predef(Predef::new(op, ty).unwrap()));
        assert_eq!(Func::from_name("sumInt32"), p(Opcode::Sum, Dtype::Int32));
        assert_eq!(Func::from_name(" sum Int32 "), p(Opcode::Sum, Dtype::Int32));
        assert_eq!(Func::from_name("bxorUInt8"), p(Opcode::Bxor, Dtype::UInt8));
        assert_eq!(
            Func::from_name("copyFloat64"),
            p(Opcode::Copy, Dtype::Float64)
        );
        assert_eq!(Func::from_name("user 3"), Some(Func::User(3)));
        for bad in [
            "user",
            "user7",
            "user -1",
            "user 65536",
            "sum",
            "sumInt",
            "bandFloat32",
            "sumFloat8",
            "avgInt32",
            "",
        ] {
            assert_eq!(Func::from_name(bad), None, "{bad}");
        }
        // Every printed name reads back.
        for op in Opcode::ALL {
            for ty in [Dtype::Int8, Dtype::UInt64, Dtype::Float16, Dtype::Float64] {
                if let Some(pd) = Predef::new(op, ty) {
                    let f = Func::Predef(pd);
                    assert_eq!(Func::from_name(&f.to_string()), Some(f));
                }
            }
        }
    }
}
