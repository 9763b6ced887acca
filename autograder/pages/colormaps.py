"""The pictures' colour maps and how values are scaled onto them, without matplotlib.

matplotlib's viridis (values), RdBu_r (differences, white at zero) and PuOr (row sums, white at one) are kept as
the 256-colour tables matplotlib itself looks colours up in (below; ``tests/unit/test_pages.py`` checks them against
matplotlib), and looked up the way matplotlib does: a value scaled to 0-1 takes colour
``floor(x * 256)``, clipped to the table; NaN (a masked entry) takes the map's "bad" colour.
"""
from __future__ import annotations

from functools import cache

import numpy as np

#: the colour of an entry with no value (a masked ``-inf`` score): grey, as matplotlib's ``with_extremes(bad=)``
GREY = (0xBB, 0xBB, 0xBB)


@cache
def _table(name: str) -> np.ndarray:
    return np.frombuffer(bytes.fromhex(_HEX[name]), dtype=np.uint8).reshape(256, 3)


class Colormap:
    """One of the tables, as 8-bit RGB: ``rgb`` for arrays of scaled values, calling it for one colour as 0-1
    floats (RGBA, as matplotlib gives them: what the contrast checks read)."""

    def __init__(self, name: str, bad: tuple[int, int, int] = GREY):
        self.name, self.table, self.bad = name, _table(name), np.array(bad, dtype=np.uint8)

    def rgb(self, scaled: np.ndarray) -> np.ndarray:
        scaled = np.asarray(scaled, dtype=np.float64)
        index = np.clip(np.floor(np.nan_to_num(scaled, nan=0.0) * 256), 0, 255).astype(np.intp)
        out = np.take(self.table, index, axis=0)
        out[np.isnan(scaled)] = self.bad
        return out

    def __call__(self, scaled: float) -> tuple[float, float, float, float]:
        r, g, b = (int(c) for c in self.rgb(np.array(scaled)))
        return (r / 255, g / 255, b / 255, 1.0)


def linear(low: float, high: float):
    """``low`` -> 0, ``high`` -> 1, in a straight line (matplotlib's ``Normalize``)."""
    return lambda v: (np.asarray(v, dtype=np.float64) - low) / (high - low)


def centred(centre: float, low: float, high: float):
    """``low`` -> 0, ``centre`` -> 0.5, ``high`` -> 1, each side in a straight line (``TwoSlopeNorm``)."""
    return lambda v: np.interp(np.asarray(v, dtype=np.float64), [low, centre, high], [0.0, 0.5, 1.0])


#: 256 colours each, as hex RGB triples, 8 bits a channel (matplotlib's own tables, rounded)
_HEX = {
    "viridis": (
        "44015444025645045745055946075a46085c460a5d460b5e470d60470e61471063471164471365481467481668481769"
        "48186a481a6c481b6d481c6e481d6f481f70482071482173482374482475482576482677482878482979472a7a472c7a"
        "472d7b472e7c472f7d46307e46327e46337f463480453581453781453882443983443a83443b84433d84433e85423f85"
        "4240864241864142874144874045884046883f47883f48893e49893e4a893e4c8a3d4d8a3d4e8a3c4f8a3c508b3b518b"
        "3b528b3a538b3a548c39558c39568c38588c38598c375a8c375b8d365c8d365d8d355e8d355f8d34608d34618d33628d"
        "33638d32648e32658e31668e31678e31688e30698e306a8e2f6b8e2f6c8e2e6d8e2e6e8e2e6f8e2d708e2d718e2c718e"
        "2c728e2c738e2b748e2b758e2a768e2a778e2a788e29798e297a8e297b8e287c8e287d8e277e8e277f8e27808e26818e"
        "26828e26828e25838e25848e25858e24868e24878e23888e23898e238a8d228b8d228c8d228d8d218e8d218f8d21908d"
        "21918c20928c20928c20938c1f948c1f958b1f968b1f978b1f988b1f998a1f9a8a1e9b8a1e9c891e9d891f9e891f9f88"
        "1fa0881fa1881fa1871fa28720a38620a48621a58521a68522a78522a88423a98324aa8325ab8225ac8226ad8127ad81"
        "28ae8029af7f2ab07f2cb17e2db27d2eb37c2fb47c31b57b32b67a34b67935b77937b87838b9773aba763bbb753dbc74"
        "3fbc7340bd7242be7144bf7046c06f48c16e4ac16d4cc26c4ec36b50c46a52c56954c56856c66758c7655ac8645cc863"
        "5ec96260ca6063cb5f65cb5e67cc5c69cd5b6ccd5a6ece5870cf5773d05675d05477d1537ad1517cd2507fd34e81d34d"
        "84d44b86d54989d5488bd6468ed64590d74393d74195d84098d83e9bd93c9dd93ba0da39a2da37a5db36a8db34aadc32"
        "addc30b0dd2fb2dd2db5de2bb8de29bade28bddf26c0df25c2df23c5e021c8e020cae11fcde11dd0e11cd2e21bd5e21a"
        "d8e219dae319dde318dfe318e2e418e5e419e7e419eae51aece51befe51cf1e51df4e61ef6e620f8e621fbe723fde725"
    ),
    "RdBu_r": (
        "05306106326407346708366a09386d0a3b700c3d730d3f760e41790f437b10457e114781124984134c87144e8a15508d"
        "1752901854931956961a58991b5a9c1c5c9f1d5fa21e61a51f63a82065ab2267ac2369ad246aae266caf276eb02870b1"
        "2a71b22b73b32c75b42e77b52f79b5307ab6327cb7337eb83480b93681ba3783bb3885bc3a87bd3b88be3c8abe3e8cbf"
        "3f8ec0408fc14291c24393c34695c44997c54c99c64f9bc7529dc8569fc959a1ca5ca3cb5fa5cd62a7ce65a9cf68abd0"
        "6bacd16eaed271b0d375b2d478b4d57bb6d67eb8d781bad884bcd987beda8ac0db8dc2dc90c4dd93c6de96c7df98c8e0"
        "9bc9e09dcbe1a0cce2a2cde3a5cee3a7d0e4a9d1e5acd2e5aed3e6b1d5e7b3d6e8b6d7e8b8d8e9bbdaeabddbeac0dceb"
        "c2ddecc5dfecc7e0edcae1eecce2efcfe4efd1e5f0d2e6f0d4e6f1d5e7f1d7e8f1d8e9f1dae9f2dbeaf2ddebf2deebf2"
        "e0ecf3e1edf3e3edf3e4eef4e6eff4e7f0f4e9f0f4eaf1f5ecf2f5edf2f5eff3f5f0f4f6f2f5f6f3f5f6f5f6f7f6f7f7"
        "f7f6f6f7f5f4f8f4f2f8f3f0f8f2eff8f1edf9f0ebf9efe9f9eee7f9ede5f9ebe3faeae1fae9dffae8defae7dcfbe6da"
        "fbe5d8fbe4d6fbe3d4fce2d2fce0d0fcdfcffcdecdfdddcbfddcc9fddbc7fdd9c4fcd7c2fcd5bffcd3bcfbd0b9fbceb7"
        "fbccb4facab1fac8aff9c6acf9c4a9f9c2a7f8bfa4f8bda1f8bb9ef7b99cf7b799f7b596f6b394f6b191f6af8ef5ac8b"
        "f5aa89f5a886f4a683f3a481f2a17ff19e7df09c7bef9979ee9677ec9374eb9172ea8e70e98b6ee8896ce6866ae58368"
        "e48066e37e64e27b62e17860df765ede735cdd7059dc6e57db6b55da6853d86551d7634fd6604dd55d4cd35a4ad25849"
        "d05548cf5246ce4f45cc4c44cb4942c94741c84440c6413ec53e3dc43b3cc2383ac13639bf3338be3036bd2d35bb2a34"
        "ba2832b82531b72230b61f2eb41c2db3192cb1182bae172aab162aa81529a51429a213289f12289c1127991027960f27"
        "930e26900d268d0c258a0b25870a248409248108237f08237c07227906227605217304217003206d02206a011f67001f"
    ),
    "PuOr": (
        "7f3b08813c08833d08853e088740088941088b42088d43078f44079145079346079548079749079a4a079c4b079e4c07"
        "a04d07a24e07a44f07a65107a85206aa5306ac5406ae5506b05606b25706b45906b65a07b75c07b95e08bb5f08bd6109"
        "be630ac0640ac2660bc4680bc6690cc76b0cc96d0dcb6e0dcd700ece720fd0730fd27510d47610d57811d77a11d97b12"
        "db7d12dc7f13de8013e08214e18417e2861ae3881de58a20e68d23e78f27e8912ae9932dea9530eb9733ed9936ee9b39"
        "ef9e3cf0a03ff1a242f2a446f3a649f4a84cf6aa4ff7ac52f8ae55f9b158fab35bfbb55efcb761fdb965fdba68fdbc6b"
        "fdbd6efdbf72fdc175fdc278fdc47bfdc57ffdc782fdc885fdca88fdcc8cfecd8ffecf92fed095fed299fed39cfed59f"
        "fed7a2fed8a6fedaa9fedbacfeddaffedeb3fee0b6fee1b9fde2bbfde3befde4c0fde5c3fce5c5fce6c8fce7cafce8cd"
        "fbe9cffbead2fbebd5faecd7faeddafaeedcfaeedff9efe1f9f0e4f9f1e6f9f2e9f8f3ecf8f4eef8f5f1f7f6f3f7f7f6"
        "f6f6f7f5f5f6f4f4f6f3f3f5f2f2f5f0f1f4eff0f4eeeef3ededf3ebecf3eaebf2e9eaf2e8e9f1e7e8f1e5e7f0e4e5f0"
        "e3e4efe2e3efe1e2eedfe1eedee0eddddfeddcddecdadcecd9dbebd8daebd7d8ead5d6e9d4d4e8d2d3e7d1d1e6cfcfe5"
        "cecde4cccbe3cbc9e2c9c8e1c8c6e0c6c4dfc5c2dec3c0ddc2bedcc0bddbbfbbdabdb9d9bcb7d8bab5d7b9b3d6b7b1d5"
        "b6b0d4b4aed3b3acd2b1aad1afa8d0ada6ceaba3cda9a1cba79fcaa59dc8a39bc7a198c59f96c49d94c29b92c19990bf"
        "988dbe968bbc9489bb9287b99085b88e82b68c80b58a7eb3887cb2867ab08477af8275ad8073ac7e70ab7d6da97b6aa8"
        "7967a67764a57661a4745ea2725ba170589f6f559e6d529c6b4f9b6a4c9a684998664697644395634094613d935f3a91"
        "5d37905c348e5a318d582e8c572b8a5528895326875225845023824f22804d207d4c1f7b4a1d78491c76471a74451871"
        "44176f42156c41146a3f12683e11653c0f633b0e61390c5e380b5c3609593508573306553205523003502f024d2d004b"
    ),
}
