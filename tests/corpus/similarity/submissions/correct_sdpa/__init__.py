"""Sample submission: correct, built on torch.nn.functional.scaled_dot_product_attention."""
