"""The lexical-shift split (issue 33): the same 600-case plan worded with *held-out* primary templates.

The default packs' primary sentences are separable by surface cues (``local:lexical`` scores 320/320 on the kit's
CONFIRM-320).  This module holds paraphrase families the default packs never use — other verbs, other framings,
indirect requests — for each action in English and Chinese; :func:`shifted_pack` swaps them in for the primary
sentences and keeps everything else (secondary remarks, fillers, object references, the composition, the states,
the gold labels).  A proposer tuned or trained on the default wording is measured on wording it never saw.
Generated with ``generate_benchmark(..., lexical_shift=True)`` / ``routebr-kit generate --lexical-shift``; the
default benchmark is unchanged.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from .composition import A1, A2, A3, A4, A5
from .language import Language, LanguagePack

SHIFT_PRIMARY = MappingProxyType({
    Language.EN: MappingProxyType({
        A1: (
            "If you were in my shoes, [[would you put money into]] {obj} for {goal}?",
            "I keep going back and forth on {obj}; [[is it sensible to hold]] it for {horizon}?",
            "[[Talk me through whether]] {obj} belongs in a plan for {goal}.",
            "My gut says {obj}, but [[does that make sense]] with about {amount} to spare?",
            "[[Am I right to lean towards]] {obj} for {horizon}, or is there a catch?",
            "[[Help me decide]] if {obj} is a reasonable pick for {goal}.",
        ),
        A2: (
            "[[Remind me what]] {obj} charges each year in fees.",
            "I'm after [[the basic facts on]] {obj}: issuer, benchmark, launch date.",
            "[[Where can I find the numbers for]] {obj} over {period}?",
            "[[Tell me how]] {obj} has traded {when}.",
            "What does {obj} [[actually hold]] these days?",
            "[[I need the details of]] {obj}, nothing more.",
        ),
        A3: (
            "[[How am I doing with]] {obj} so far?",
            "[[Where do I stand on]] {obj} since I bought in {when}?",
            "[[Is my money in]] {obj} pulling its weight?",
            "[[Check how exposed I am]] to {obj} overall.",
            "[[Have I made or lost]] money on {obj} this year?",
            "[[Run the numbers on what I own]] of {obj}.",
        ),
        A4: (
            "[[Nothing is working]] today: {issue}.",
            "[[I could use a hand]] here, {issue}.",
            "[[This is the third time]] {issue}, what is happening?",
            "[[Sorry to bother you]], but {issue}.",
            "[[I'm at a loss]] because {issue}.",
            "[[Can someone sort this out]]? {issue}.",
        ),
        A5: (
            "[[Get me into]] {obj} with {qty} shares today.",
            "[[Unload]] {obj} from my account, all of it.",
            "[[Put]] {amount} into {obj} right away.",
            "Pull {qty} shares of {obj} [[out of my account]] today.",
            "[[Trade me out of]] {obj} and into cash now.",
            "[[I'll take]] {qty} more shares of {obj} at {price}.",
        ),
    }),
    Language.ZH: MappingProxyType({
        A1: (
            "换作是你，[[会不会入手]]{obj}来做{goal}？",
            "我对{obj}拿不定主意，拿{horizon}[[靠谱吗]]？",
            "[[帮我拿个主意]]，{obj}放进{goal}的计划里合不合理？",
            "手里有{amount}，押在{obj}上[[明智吗]]？",
            "[[你觉得我该不该]]把{obj}当成长期配置？",
            "[[从我的情况出发]]，{obj}算不算好选择？",
        ),
        A2: (
            "告诉我{obj}[[每年收多少费用]]。",
            "{obj}是[[哪家发行]]的，什么时候成立的？",
            "[[给我看看]]{obj}过去{period}的数据。",
            "{obj}{when}[[成交情况如何]]？",
            "{obj}[[里面都装了些什么]]？",
            "[[我只想知道]]{obj}的基本资料。",
        ),
        A3: (
            "我在{obj}上[[赚了还是亏了]]？",
            "{when}买的{obj}，[[现在我处于什么位置]]？",
            "[[我放在]]{obj}的钱表现怎样？",
            "[[算算我在]]{obj}上的敞口有多大。",
            "[[我名下的]]{obj}今年收益如何？",
            "[[看一下我手上]]{obj}的情况。",
        ),
        A4: (
            "[[今天什么都不顺]]：{issue}。",
            "[[搭把手吧]]，{issue}。",
            "[[这都第三次了]]，{issue}，到底怎么回事？",
            "[[不好意思打扰]]，{issue}。",
            "[[我实在没办法了]]，{issue}。",
            "[[谁能处理一下]]？{issue}。",
        ),
        A5: (
            "[[给我拿]]{qty}份{obj}。",
            "把{obj}[[清掉]]，一份不留。",
            "[[现在就投]]{amount}进{obj}。",
            "[[从我账户里出掉]]{qty}份{obj}。",
            "把{obj}[[换成现金]]，马上。",
            "按{price}[[再拿]]{qty}份{obj}。",
        ),
    }),
})


def shifted_pack(pack: LanguagePack) -> LanguagePack:
    """``pack`` with the held-out primary templates of its language."""
    return replace(pack, primary=SHIFT_PRIMARY[pack.language])


__all__ = ["SHIFT_PRIMARY", "shifted_pack"]
