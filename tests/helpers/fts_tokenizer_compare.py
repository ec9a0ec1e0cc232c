"""Measure FTS5 recall of planted facts: `trigram` vs `unicode61` (+porter) with CJK bigrams.

Not a test: run `python tests/helpers/fts_tokenizer_compare.py` and read the table. Each planted
fact hides among filler messages; a later question about it must bring it back in the top 6.
"""

from __future__ import annotations

import random
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from memory.recall import bigram_text, fts_query

# (fact said long ago, the question asked later)
PLANTED = [
    (
        "We had dinner at Trattoria Lucca on Via Roma, the carbonara was perfect.",
        "What was the name of that trattoria with the carbonara?",
    ),
    ("My sister Ingrid is getting married in Bergen next June.", "When is Ingrid's wedding again?"),
    ("I adopted two cats last spring, Miso and Tofu.", "How old are my cats now, do you think?"),
    ("The wifi password at the cabin is blue-heron-42.", "what's the cabin wifi password"),
    (
        "I'm allergic to penicillin, the doctor said to always mention it.",
        "Should I tell the dentist about my allergy?",
    ),
    (
        "My flight to Reykjavík leaves on 3 February at 07:40.",
        "What time does my flight to Reykjavik leave?",
    ),
    (
        "I started running in March and my best 10k is 48 minutes.",
        "What is my best time for a 10k run?",
    ),
    (
        "The plumber who fixed the boiler was called Dariusz Nowak.",
        "Who fixed our boiler last time?",
    ),
    (
        "I keep the spare key under the third flowerpot by the garage.",
        "Where did I say the spare keys are?",
    ),
    (
        "Our book club is reading Middlemarch by George Eliot this month.",
        "Which book is the book club reading?",
    ),
    (
        "I'm learning to play the cello with a teacher named Aurélie.",
        "What was my cello teacher's name?",
    ),
    (
        "The car's tyres were replaced at 84,000 km in Tromsø.",
        "At what mileage were the tyres changed?",
    ),
    ("我上个月在京都吃了一家很好吃的拉面店，叫一兰。", "那家拉面店叫什么名字？"),
    ("我女儿的生日是五月十二号。", "我女儿生日是哪天？"),
    ("我的护照号码放在书桌左边的抽屉里。", "护照放在哪里了？"),
    ("我們在台北的鼎泰豐吃了小籠包。", "我們在哪裡吃小籠包？"),
    ("我对花生过敏。", "我对什么过敏？"),
    ("来週の月曜日に東京で歯医者の予約があります。", "歯医者の予約はいつ？"),
    ("私の猫の名前はモモです。", "猫の名前は何でしたっけ？"),
    ("제 동생은 부산에 살아요.", "동생은 어디에 살아요?"),
    (
        "My colleague 王伟 recommended the hotpot place 海底捞 near the office.",
        "Which hotpot place did 王伟 recommend?",
    ),
    (
        "Remember: the project codename is BLUEFINCH and the deadline is 14 August.",
        "what was the project codename",
    ),
    ("I parked on level B3, spot 117, at the airport.", "Which spot did I park in at the airport?"),
    (
        "My grandmother's recipe uses 300 g of rye flour and caraway.",
        "How much rye flour in grandma's recipe?",
    ),
]

TOPICS = [
    "weather",
    "work",
    "football",
    "music",
    "the news",
    "a movie",
    "lunch",
    "the weekend",
    "a podcast",
    "travel",
    "the garden",
    "coffee",
    "a meeting",
    "the gym",
    "dinner plans",
]
TEMPLATES = [
    "What do you think about {t}?",
    "I was thinking about {t} again today.",
    "Can you give me three ideas about {t}?",
    "Honestly {t} has been a lot this week.",
    "Here are some thoughts on {t}: keep it simple and take notes.",
    "Let me know what you remember about {t}.",
    "Sure! {t} can be fun if you plan ahead.",
    "今天我们聊聊{t}吧。",
    "我觉得{t}很有意思。",
    "明日は{t}について話しましょう。",
    "That name sounds nice, what time works for you?",
    "The restaurant was busy, we waited.",
    "My friend says the flight was delayed by an hour.",
    "Where did you put the notes?",
    "我们去吃饭吧，那家店人很多。",
    "名前を忘れました。",
]


def filler(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(TEMPLATES).format(t=rng.choice(TOPICS)) for _ in range(n)]


def build(tokenizer: str, texts: list[str]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE f USING fts5(body, tokenize={tokenizer!r})")
    bigram = "trigram" not in tokenizer
    db.executemany(
        "INSERT INTO f (rowid, body) VALUES (?, ?)",
        [(i, bigram_text(t) if bigram else t) for i, t in enumerate(texts)],
    )
    return db


def measure(tokenizer: str, texts: list[str], planted_rows: list[int], k: int = 6):
    """Per planted fact: found in the top k or not; plus index bytes and ms per query."""
    db = build(tokenizer, texts)
    mode = "trigram" if "trigram" in tokenizer else "bigram"
    size = (
        db.execute("PRAGMA page_count").fetchone()[0] * db.execute("PRAGMA page_size").fetchone()[0]
    )
    found_each, started = [], time.perf_counter()
    for (_, question), row in zip(PLANTED, planted_rows, strict=True):
        q = fts_query(question, mode=mode)
        top = []
        if q:
            sql = "SELECT rowid FROM f WHERE f MATCH ? ORDER BY bm25(f) LIMIT ?"
            top = [r[0] for r in db.execute(sql, (q, k))]
        found_each.append(row in top)
    ms = (time.perf_counter() - started) / len(PLANTED) * 1000
    return found_each, size, ms


def main(n_filler: int = 2000) -> None:
    texts = filler(n_filler)
    rng = random.Random(2)
    planted_rows: list[int] = []
    for _ in PLANTED:
        pos = rng.randrange(len(texts) + 1)
        texts.insert(pos, PLANTED[len(planted_rows)][0])
        planted_rows = [r + (r >= pos) for r in planted_rows] + [pos]
    english = [f.isascii() for f, _ in PLANTED]
    n_en = sum(english)
    print(
        f"{len(PLANTED)} planted facts ({n_en} English, {len(PLANTED) - n_en} CJK or mixed) "
        f"among {n_filler} filler messages; found = in the BM25 top 6"
    )
    for tokenizer in (
        "trigram",
        "unicode61 remove_diacritics 2",
        "porter unicode61 remove_diacritics 2",
    ):
        found, size, ms = measure(tokenizer, texts, planted_rows)
        en = sum(f for f, e in zip(found, english, strict=True) if e)
        missed = [PLANTED[i][1] for i, f in enumerate(found) if not f]
        print(
            f"{tokenizer:38s} {sum(found)}/{len(PLANTED)} (English {en}/{n_en}, "
            f"CJK/mixed {sum(found) - en}/{len(PLANTED) - n_en}); index {size / 1024:.0f} KiB; "
            f"{ms:.2f} ms/query; missed: {missed}"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
