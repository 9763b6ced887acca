"""What grading produces: results.json (one model for every reader and writer), the class summary, the log."""
