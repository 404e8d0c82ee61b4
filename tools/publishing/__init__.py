"""Publishing toolset and the worker that publishes due schedules: worker, publish runs, queues."""
