//! A journey's users: their variables, captures and cookies (docs/contract.md, "Journeys").
pub mod capture;
pub mod cookies;
pub mod users;
