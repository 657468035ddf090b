"""The page for people at `/ui`: static HTML, CSS and JavaScript in `static/`, with no build step
and nothing fetched from another origin (it must work air-gapped), on the service's own APIs."""
