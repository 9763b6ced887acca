"""Sample submission: correct, in an alternative style (matmul/bmm/F.linear, tril-convention mask buffer,
reshape/permute heads, transfer through load_state_dict, hand-written dropout)."""
