"""A named data set for memory search: memories an agent might hold, and questions with the
memories that answer them, by kind (exact keywords, paraphrases, names, dates, multilingual
text). bench/memory_search.py prints recall@5 and MRR over it; tests/server/test_memory_search.py
holds the exact-keyword questions to a floor.

Each memory has a short name (its ``key`` when stored); a question names the memories that
answer it. Paraphrase questions share no word with their answers on purpose: they measure what
a lexical index cannot do (docs/memory.md, "Semantic search").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Kind = Literal["exact", "paraphrase", "name", "date", "multilingual"]


@dataclass(frozen=True)
class Question:
    kind: Kind
    q: str
    answers: tuple[str, ...]  # the names of the memories that answer it


MEMORIES: Final[dict[str, str]] = {
    "deploy-friday": "Never deploy the billing service on a Friday afternoon; the on-call "
    "rotation is thin and rollbacks take hours.",
    "db-password-rotation": "The PostgreSQL password for the analytics replica is rotated every "
    "90 days by the vault job; the last rotation failed silently.",
    "user-prefers-tea": "Maria prefers green tea over coffee and dislikes meetings before ten.",
    "cat-name": "The user's cat is called Biscuit and is afraid of the vacuum cleaner.",
    "project-deadline": "The Orion migration must be finished by 2025-03-14, the end of the "
    "first quarter sprint.",
    "birthday": "Kwame Mensah's birthday is on 12 August; he likes jollof rice and highlife.",
    "allergy": "Severe peanut allergy: never suggest recipes containing peanuts or groundnut oil.",
    "api-limit": "The weather API allows 60 requests per minute; above that it answers HTTP 429.",
    "server-location": "Production servers run in the Frankfurt region (eu-central-1).",
    "standup-time": "The daily standup is at 09:30 Lisbon time in the #platform channel.",
    "favourite-book": "Their favourite novel is One Hundred Years of Solitude by Gabriel García "
    "Márquez.",
    "german-note": "Der Kunde möchte die Rechnung jeden Monat per Post erhalten, nicht per E-Mail.",
    "french-note": "La réunion avec l'équipe de Lyon est déplacée au jeudi prochain.",
    "spanish-note": "El cliente de Valencia pagó la factura de noviembre con retraso.",
    "japanese-note": "東京オフィスの会議室は毎週水曜日に予約されています。",
    "russian-note": "Дмитрий отвечает за резервное копирование базы данных.",
    "ssh-key": "The deploy key for the mirror host is stored in the vault under ssh/mirror.",
    "meeting-notes": "Quarterly review: revenue grew 12 percent, churn fell, hiring is frozen "
    "until July.",
    "bug-timezone": "Bug 4521: reminders fire an hour late after the daylight saving switch "
    "because times are stored in local time.",
    "travel": "Flight to Nairobi on 3 May 2025, seat 14C, returning on the 17th.",
    "dentist": "Dentist appointment with Dr. Okafor on 2025-06-02 at 15:00.",
    "wifi": "The office wifi network is hearth-guest; the password changes every Monday.",
    "language-pref": "Always answer Ana in Portuguese; she reads English but prefers Portuguese.",
    "kubernetes": "The staging cluster runs Kubernetes 1.29; the ingress controller is Traefik.",
    "coffee-machine": "The coffee machine on the third floor is broken; use the kitchen one.",
    "budget": "The marketing budget for 2025 is 40,000 euros, approved by Ingrid Larsen.",
    "password-policy": "Passwords need at least 14 characters; reuse of the last five is blocked.",
    "backup-schedule": "Nightly backups run at 02:00 UTC and are kept for 35 days.",
    "emoji-pref": "The user dislikes emoji in formal emails to clients.",
    "pet-vet": "Biscuit's vet is Dr. Haruki Sato at the Riverside clinic.",
    "oncall": "Priya Raman is on call the week of 2025-04-07 for the payments team.",
    "greek-note": "Ο Νίκος θα στείλει την προσφορά μέχρι την Παρασκευή.",
    "hindi-note": "राहुल अगले सप्ताह दिल्ली कार्यालय जाएंगे।",
    "commute": "Commutes by bicycle and asks for rain warnings the evening before.",
    "sleep": "Goes to bed around eleven and wants no notifications after ten at night.",
    "diet": "Vegetarian since 2019; eats fish occasionally when travelling.",
    "car": "Drives a blue 2016 Toyota Corolla, registration plate KX-482-ZB.",
    "music": "Listens to Nina Simone and Fela Kuti while writing reports.",
    "license-renewal": "The driving licence must be renewed before 2026-01-31.",
    "loan": "Lent 200 dollars to Tomasz on 2024-11-20; he promised to repay by Christmas.",
}

QUESTIONS: Final[tuple[Question, ...]] = (
    # Exact keywords: words that appear in the answer as written.
    Question("exact", "deploy Friday", ("deploy-friday",)),
    Question("exact", "analytics replica password", ("db-password-rotation",)),
    Question("exact", "peanut allergy", ("allergy",)),
    Question("exact", "weather API requests", ("api-limit",)),
    Question("exact", "Frankfurt region", ("server-location",)),
    Question("exact", "daily standup", ("standup-time",)),
    Question("exact", "deploy key mirror", ("ssh-key",)),
    Question("exact", "quarterly review revenue", ("meeting-notes",)),
    Question("exact", "daylight saving reminders", ("bug-timezone",)),
    Question("exact", "wifi password", ("wifi",)),
    Question("exact", "Kubernetes ingress", ("kubernetes",)),
    Question("exact", "coffee machine broken", ("coffee-machine",)),
    Question("exact", "marketing budget", ("budget",)),
    Question("exact", "nightly backups", ("backup-schedule",)),
    Question("exact", "Toyota Corolla", ("car",)),
    Question("exact", '"vacuum cleaner"', ("cat-name",)),
    Question("exact", "Kubern*", ("kubernetes",)),
    Question("exact", "licence renewed", ("license-renewal",)),
    # Paraphrases: the same meaning in other words.
    Question("paraphrase", "what should I avoid cooking with nuts", ("allergy",)),
    Question("paraphrase", "which drink does she like in the morning", ("user-prefers-tea",)),
    Question("paraphrase", "when is the rollout of production code risky", ("deploy-friday",)),
    Question("paraphrase", "where are our machines hosted in Europe", ("server-location",)),
    Question("paraphrase", "how long do we keep copies of the data", ("backup-schedule",)),
    Question("paraphrase", "what does the person eat, meat or not", ("diet",)),
    Question("paraphrase", "how does he get to work", ("commute",)),
    Question("paraphrase", "quiet hours for alerts", ("sleep",)),
    Question("paraphrase", "who owes me money", ("loan",)),
    Question("paraphrase", "the animal at home and its doctor", ("cat-name", "pet-vet")),
    # Names: people, places, products.
    Question("name", "Kwame", ("birthday",)),
    Question("name", "Biscuit", ("cat-name", "pet-vet")),
    Question("name", "García Márquez", ("favourite-book",)),
    Question("name", "Priya Raman", ("oncall",)),
    Question("name", "Ingrid Larsen", ("budget",)),
    Question("name", "Okafor", ("dentist",)),
    Question("name", "Nina Simone", ("music",)),
    Question("name", "Tomasz", ("loan",)),
    Question("name", "Дмитрий", ("russian-note",)),
    # Dates, as the memories write them.
    Question("date", "2025-03-14", ("project-deadline",)),
    Question("date", "2025-06-02", ("dentist",)),
    Question("date", "12 August", ("birthday",)),
    Question("date", "3 May 2025", ("travel",)),
    Question("date", "2025-04-07", ("oncall",)),
    Question("date", "2024-11-20", ("loan",)),
    # Multilingual text, asked in the memory's language.
    Question("multilingual", "Rechnung per Post", ("german-note",)),
    Question("multilingual", "réunion Lyon", ("french-note",)),
    Question("multilingual", "factura de noviembre", ("spanish-note",)),
    Question(
        "multilingual", "東京オフィスの会議室は毎週水曜日に予約されています", ("japanese-note",)
    ),
    Question("multilingual", "резервное копирование", ("russian-note",)),
    Question("multilingual", "Νίκος προσφορά", ("greek-note",)),
    Question("multilingual", "दिल्ली कार्यालय", ("hindi-note",)),
)

KINDS: Final[tuple[Kind, ...]] = ("exact", "paraphrase", "name", "date", "multilingual")


@dataclass(frozen=True)
class Scores:
    """recall@5 and MRR of one kind of question."""

    kind: str
    questions: int
    recall_at_5: float
    mrr: float


def score(kind: str, found: list[tuple[Question, list[str]]]) -> Scores:
    """recall@5 (the share of a question's answers among its first five results, averaged) and
    the mean reciprocal rank of the first answer, over ``found`` (question, result names)."""
    recalls, reciprocal = [], []
    for question, names in found:
        wanted = set(question.answers)
        recalls.append(len(wanted & set(names[:5])) / len(wanted))
        rank = next((i for i, name in enumerate(names, 1) if name in wanted), None)
        reciprocal.append(1 / rank if rank else 0.0)
    count = len(found)
    return Scores(
        kind,
        count,
        sum(recalls) / count if count else 0.0,
        sum(reciprocal) / count if count else 0.0,
    )
