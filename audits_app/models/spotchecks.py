"""Human spot-checks, out-of-band audits and human reader results (issue 6)."""
