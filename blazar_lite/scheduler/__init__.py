"""The lease scheduler: claims due lease events and runs them (see `claims` and `runner`)."""
