"""One base model carrying several LoRA adapters, each decoding row picking its own adapter.

Used by `alignment dpo-eval` (`alignment.dpo.shared_eval`) to decode the base policy and every
trained adapter in the same batches. The base is loaded once and each adapter is added to one
`PeftModel` under its own name, unmerged. PEFT's LoRA layers take an `adapter_names` argument,
one name per input row ("__base__" for no adapter), and apply each adapter to its own rows
only ("mixed adapter batches"). `PeftModel.generate(adapter_names=...)` passes it through forward
pre-hooks; the decoders of `alignment.generation.hf` run their own loops (and the shared-prefix
one calls the projections directly), so `Router` installs the same kind of hook once and each
decoder says, around every forward, which prompt each of its rows belongs to (`Routing`).

Limits of PEFT's mixed batches (peft 0.21): no merged weights (a merged adapter could not be
switched per row), no DoRA, no beam search here (the decoders never beam). The CUDA static-cache
decoder is not used with routed adapters: its compiled step would see a different Python list of
names per batch and recompile.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

BASE_ADAPTER = "__base__"  # PEFT's name for "no adapter on this row"


def load_adapters(model: Any, adapters: dict[str, Path]) -> Any:
    """`model` (a transformers causal LM) with every adapter loaded unmerged under its own name;
    returns the inner model (the same class as `model`, its LoRA layers injected), in eval mode."""
    from peft import PeftModel

    if not adapters:
        return model.eval()
    if BASE_ADAPTER in adapters or any("." in name for name in adapters):
        raise ValueError(f"adapter names must not be {BASE_ADAPTER!r} or contain '.': {sorted(adapters)}")
    (first, path), *rest = adapters.items()
    peft = PeftModel.from_pretrained(model, str(path), adapter_name=first)
    for name, p in rest:
        peft.load_adapter(str(p), adapter_name=name)
    return peft.base_model.model.eval()


class Router:
    """Forward pre-hooks on every LoRA layer of `model` that pass the current rows' adapter names."""

    def __init__(self, model: Any) -> None:
        from peft.tuners.lora import LoraLayer
        from peft.utils.other import AuxiliaryTrainingWrapper

        self.names: list[str] | None = None
        # The modules PEFT's own mixed-batch hooks reach: LoRA layers and modules an adapter
        # trains in full (modules_to_save), which also pick their copy per row.
        self.layers = [m for m in model.modules() if isinstance(m, (LoraLayer, AuxiliaryTrainingWrapper))]
        if not self.layers:
            raise ValueError(f"{type(model).__name__} has no LoRA layers to route")
        for layer in self.layers:
            layer.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if self.names is None:  # a forward outside `rows` would silently use PEFT's active adapter
            raise RuntimeError("a routed LoRA model ran a forward without adapter names for its rows")
        return args, {**kwargs, "adapter_names": self.names}

    @contextmanager
    def rows(self, names: list[str]) -> Iterator[None]:
        """Within the block, input row i of every forward uses adapter `names[i]`."""
        self.names = names
        try:
            yield
        finally:
            self.names = None


class Routing:
    """Which adapter each distinct prompt of one decode call uses (`prompt_names[j]`, None: no
    routing at all). A decoder wraps every forward in `routing(prompts_of_rows)`, and shares a
    prompt's cache only with a prompt that `same` says runs through the same adapter."""

    def __init__(self, router: Router | None = None, prompt_names: Sequence[str] | None = None) -> None:
        self.router, self.prompt_names = router, prompt_names

    def __call__(self, row_prompts: Sequence[int]) -> AbstractContextManager[None]:
        if self.router is None or self.prompt_names is None:
            return nullcontext()
        return self.router.rows([self.prompt_names[p] for p in row_prompts])

    def same(self, a: int, b: int) -> bool:
        """Whether prompts a and b run through the same weights (always, without routing).

        >>> Routing().same(0, 1), Routing(None, ["x", "y"]).same(0, 1)
        (True, True)
        """
        return self.router is None or self.prompt_names is None or self.prompt_names[a] == self.prompt_names[b]


NO_ROUTING = Routing()
