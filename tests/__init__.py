"""The kit's own tests."""
