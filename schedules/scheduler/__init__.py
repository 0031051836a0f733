"""The scheduler: claims due slots, runs tasks, records every run."""
