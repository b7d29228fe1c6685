"""English phrase banks (customer messages to a retail brokerage's service desk).

The primary sentence carries the action's cue; secondary sentences add the mixed-service language of DUAL and
TRIPLE cells (a conditional trade, a worried aside, an opinion the customer already holds, doubt about the
channel).  Fillers add context but no cue.
"""

from __future__ import annotations

from types import MappingProxyType

from .composition import A1, A2, A3, A4, A5
from .language import CueFamily, Language, LanguagePack

PACK = LanguagePack(
    language=Language.EN,
    joiner=" ",
    primary=MappingProxyType({
        A1: (
            "Would {obj} be [[a sensible choice]] for money I won't need for {horizon}?",
            "I'm trying to work out whether {obj} [[suits a cautious investor]] like me.",
            "Could you [[give me your view]] on {obj} for {goal}?",
            "Is {obj} [[worth considering]] if I only have about {amount} to invest?",
            "I'd like [[a recommendation]]: does {obj} make sense for {goal}?",
            "How would you [[weigh the risks]] of {obj} against what it might return over {horizon}?",
            "Please [[advise me]] whether {obj} fits a plan that runs {horizon}.",
            "Do you think {obj} is [[a good fit]] for someone who hates big drawdowns?",
            "[[Should I consider]] {obj} for {goal}, or is it too volatile for me?",
            "What's [[your honest opinion]] of {obj} as a core holding for {horizon}?",
            "Between keeping cash and {obj}, [[which would you recommend]] for {goal}?",
        ),
        A2: (
            "What is the [[expense ratio]] of {obj}?",
            "Can you pull up the [[fact sheet]] for {obj}?",
            "[[Which index]] does {obj} follow, and how closely does it track it?",
            "When does {obj} [[pay its distributions]], and how often?",
            "I'd like to see the [[top holdings]] of {obj}.",
            "How big are the [[assets under management]] of {obj} at the moment?",
            "What was the [[closing price]] of {obj} {when}?",
            "Could you show me the [[listing details]] of {obj}, such as the exchange and inception date?",
            "Please send me the [[latest prospectus]] for {obj}.",
            "What does the [[performance history]] of {obj} look like over {period}?",
            "How large is the [[bid-ask spread]] on {obj} usually?",
        ),
        A3: (
            "How much of [[my portfolio]] is in {obj} right now?",
            "Can you [[analyse my holdings]] in {obj} and tell me my unrealised gain?",
            "What's [[my cost basis]] on {obj} after the purchases I made {when}?",
            "Looking at [[my account]], how concentrated am I in {obj}?",
            "Please [[review my position]] in {obj}; am I above my target allocation?",
            "How much did {obj} [[add to my returns]] this quarter?",
            "Can you break down [[the distributions I've received]] from {obj} this year?",
            "Compare [[my position]] in {obj} with the rest of what I hold.",
            "I'd like [[an analysis of my account]]: how much risk does {obj} add?",
            "What is [[my average purchase price]] for {obj} across all my buys?",
        ),
        A4: (
            "[[I'm really frustrated]]: {issue}.",
            "[[Please help me]], {issue} and I don't know what to do.",
            "[[I'm worried]] because {issue}. Is my account safe?",
            "Honestly [[this is stressing me out]]; {issue}.",
            "[[Can you explain what's going on]]? I noticed that {issue}.",
            "[[I need some help]] because {issue}.",
            "[[I've been waiting all day]] and {issue}.",
            "[[It's upsetting]] that {issue}, and nobody has called me back.",
            "[[I'm confused and a bit upset]]: {issue}.",
            "[[Could you walk me through]] what to do now that {issue}?",
            "[[I'd appreciate some reassurance]], because {issue}.",
        ),
        A5: (
            "Please [[place a buy order]] for {qty} shares of {obj}.",
            "I want to [[sell my entire position]] in {obj} today.",
            "[[Set up a monthly purchase]] of {amount} into {obj}, starting next month.",
            "Can you [[cancel my pending order]] for {obj}?",
            "[[Buy]] {qty} shares of {obj} at market, please.",
            "I'd like to [[sell half]] of my holding in {obj} and keep the rest.",
            "Go ahead and [[submit a limit order]] for {qty} shares of {obj} at {price}.",
            "Please [[redeem]] {qty} shares of {obj} for me today.",
            "[[Execute a purchase]] of {amount} worth of {obj} this afternoon.",
            "I need to [[switch out of]] {obj} into cash before the end of the week.",
        ),
    }),
    secondary=MappingProxyType({
        CueFamily.ACTION_SENSITIVE: (
            "If I [[decide to buy]] later, what would I have to confirm first?",
            "I'm not [[placing an order]] yet, I'm just thinking it through.",
            "I might [[sell some]] next month, but that's for later.",
            "Please don't [[trade anything]] for me.",
            "Eventually I may [[add to my position]], but not today.",
            "Before any [[purchase]], I want to understand this properly.",
        ),
        CueFamily.SUPPORT_SENSITIVE: (
            "Honestly the recent swings have me [[a bit anxious]].",
            "[[I'm nervous]] after last week's drop.",
            "Sorry if this is basic, [[I'm a little stressed]] about it.",
            "[[It's been a rough week]] for my savings.",
            "[[I feel lost]] with all these numbers.",
            "The last call left me [[quite upset]], so please be clear.",
        ),
        CueFamily.ADVISORY: (
            "I've already decided it [[suits my plan]].",
            "No need to tell me [[whether it's a good idea]].",
            "I'll work out [[whether it fits my goals]] on my own.",
            "A friend said it's [[a good long-term pick]].",
            "I read that it [[suits cautious investors]].",
        ),
        CueFamily.AMBIGUITY: (
            "[[Not sure if this is the right place]] to ask.",
            "[[I don't know which team]] handles this.",
            "[[Maybe this is the wrong channel]], sorry.",
            "[[I'm not sure what this is called]] in your menu.",
        ),
    }),
    fillers=(
        "I'm on the mobile app.",
        "Thanks in advance.",
        "I'm writing from the web portal.",
        "Quick question from a long-time customer.",
        "Hope you're having a good day.",
        "I saw a notification about this earlier.",
        "I'm travelling this week, so email is easiest.",
    ),
    slot_values=MappingProxyType({
        "horizon": ("five years", "eighteen months", "a decade", "three years", "twelve months", "seven years"),
        "goal": ("my retirement savings", "a house deposit", "my kids' education fund", "a steady income stream",
                 "an emergency reserve", "long-term growth"),
        "amount": ("$2,000", "$5,000", "$12,000", "$800", "$25,000", "$1,500"),
        "qty": ("10", "25", "40", "75", "100", "150", "200", "300"),
        "when": ("last Friday", "yesterday", "earlier this week", "at the end of last month", "on Monday"),
        "period": ("the past year", "the last three years", "the last six months", "the past five years"),
        "price": ("yesterday's closing price", "1% under the last trade", "the price I entered in the app"),
        "issue": ("the app keeps logging me out", "my verification code never arrives",
                  "the statement page won't load", "I can't find my tax documents",
                  "the password reset link has expired twice", "the chart screen freezes every time I open it",
                  "the transfer confirmation email never came", "the face check at login keeps failing"),
    }),
    name_forms=("{name}", "the {name}"),
    code_forms=("{code}", "{code}", "ticker {code}"),
    anaphors=("it", "that fund", "that ETF", "the same fund", "the one I mentioned", "that one"),
    conflict_forms=("{a} or {b}", "either {a} or {b} (I always mix them up)", "{a} (or was it {b}?)"),
    vague_by_group=MappingProxyType({
        "broad_index": ("that index fund", "my broad-market ETF"),
        "sector": ("that sector ETF", "the industry fund"),
        "bond": ("my bond ETF", "that bond fund"),
        "commodity": ("that commodity fund", "the commodity ETF"),
        "international": ("my international fund", "that overseas ETF"),
        "dividend": ("the dividend fund", "that income ETF"),
    }),
    vague_by_issuer=("the {issuer} fund", "my {issuer} ETF"),
    vague_generic=("that ETF", "the fund", "my ETF", "the fund on my watchlist"),
    history_mentions=(
        "Earlier today I asked about {ref}.",
        "Last week your colleague sent me some material on {ref}.",
        "I was reading about {ref} over the weekend.",
        "My previous message was about {ref}.",
        "You mentioned {ref} when we spoke on Tuesday.",
    ),
    history_neutral=(
        "Thanks for getting back to me.",
        "Sorry, I got disconnected.",
        "I had to step away for a moment.",
    ),
    ref_forms=("{name}", "the {name} ({code})", "{code}"),
)
