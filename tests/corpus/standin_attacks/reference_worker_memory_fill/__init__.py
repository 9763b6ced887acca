"""Sample submission: correct, written with torch.einsum."""
