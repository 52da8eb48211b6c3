pub mod budgets;
pub mod encode;
pub mod seen;

pub use encode::encode;
