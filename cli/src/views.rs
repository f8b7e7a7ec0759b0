//! Bernstein's operator views are the domain's ([`bernstein_domain::views::BernsteinViews`]);
//! what is tested here is how they serve beside the effects crate's operator over a real store.

pub use bernstein_domain::views::BernsteinViews;

#[cfg(test)]
mod tests;
