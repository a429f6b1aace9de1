"""One module per virtual-kubelet provider type (contract.py says what each one states).

CONTRACTS is the list of supported `type:` values; anything else is refused at load time
with the list (generators/model/checks/overflow.py).
"""

from __future__ import annotations

from generators.providers.azure_aci import AzureAci
from generators.providers.contract import Contract, ProviderInput, VirtualNodeTaint
from generators.providers.interlink import InterLink
from generators.providers.mock import Mock

CONTRACTS: dict[str, Contract] = {c.type: c for c in (Mock(), InterLink(), AzureAci())}
# Every taint key a supported provider's node carries: inference tolerates these (NoSchedule).
PROVIDER_TAINT_KEYS: tuple[str, ...] = tuple(sorted({c.taint_key for c in CONTRACTS.values()}))

__all__ = ["CONTRACTS", "PROVIDER_TAINT_KEYS", "Contract", "ProviderInput", "VirtualNodeTaint"]
