"""The host-passes check that compute schedulers call to keep unreserved work off reserved hosts
and reserved work on its own hosts, and a Nova-style filter class that calls it."""

# The most hosts one check answers for: one scheduling request's worth in any but the largest
# cells, and a bound on the work of one API call. The Nova filter asks in batches of this size.
MAX_HOSTS = 1000
