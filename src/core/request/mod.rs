pub mod histogram;
pub mod timeline;
