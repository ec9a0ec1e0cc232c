"""English phrase banks for the long-memory benchmark: everyday chat and the facts planted in it.

Rules the generator checks in code (bench/long_conversations.py), so a template edit that
breaks them fails loudly rather than making the benchmark easier:
- filler never names a relative date ("yesterday", "next week", a weekday): the only relative
  dates in a conversation are the planted "when" facts, so their absolute dates are unique;
- no planted value (a name, a city, an item) ever appears outside the turns that state it;
- a paraphrase question shares no content word (after Porter stemming) with its fact;
- every distractor shares words with its question and never contains the answer.
"""

from __future__ import annotations

from dataclasses import replace

from bench.long_phrases import (
    DistractorFact,
    Language,
    ListFact,
    ParaphraseFact,
    Topic,
    UpdatedFact,
    WhenFact,
)

SLOTS = {
    "dish": ["risotto", "curry", "chili", "lasagna", "dal", "shakshuka", "stew", "fried rice"],
    "veg": ["spinach", "zucchini", "mushrooms", "cabbage", "carrots", "peppers", "broccoli"],
    "show": ["Slow Horses", "Severance", "The Expanse", "Fleabag", "Shogun", "Succession"],
    "artist": ["Radiohead", "Nina Simone", "Massive Attack", "Khruangbin", "Stevie Wonder"],
    "minutes": ["twenty", "forty", "forty-five", "ninety"],
    "count": ["three", "four", "five", "six"],
    "colleague": ["Priya", "Marcus", "Ines", "Oluwaseun", "Hamid", "Greta"],
    "gadget": ["laptop", "phone", "tablet", "router", "printer"],
    "subject": ["statistics", "SQL", "Excel formulas", "Python", "public speaking"],
    "person": [
        *(f"my coworker {n}" for n in ("Priya", "Marcus", "Ines", "Hamid", "Greta", "Joel")),
        *(f"my friend {n}" for n in ("Dan", "Sofia", "Kwame", "Lena", "Ravi", "Chloe")),
        "my neighbour",
        "my cousin",
        "my landlord",
        "my flatmate",
        "my aunt",
        "our team lead",
        "someone at the bus stop",
        "the barista downstairs",
    ],
    "thing": [
        "sourdough",
        "that new bakery on the corner",
        "electric scooters",
        "a meditation app",
        "fermenting hot sauce",
        "bird watching",
        "the local election",
        "a standing desk",
        "cold showers",
        "a budgeting spreadsheet",
        "vinyl records",
        "a pottery class",
        "the price of eggs",
        "a true crime podcast",
        "air fryers",
        "the new tram line",
        "learning to juggle",
        "a sleep tracker",
        "open water swimming",
        "houseplant care",
        "a chess app",
        "the heat pump grant",
        "secondhand furniture",
        "a knitting circle",
        "bullet journals",
        "the football season",
        "a dance class",
        "solar panels",
        "that documentary about octopuses",
        "a language exchange meetup",
    ],
    "feeling": ["curious", "sceptical", "oddly excited", "a bit torn", "unsure", "tempted"],
}

TOPICS = [
    Topic(
        "cooking",
        users=[
            "Trying to cook something other than pasta tonight. Any ideas that take under half "
            "an hour?",
            "I made {dish} and it came out way too salty. Can it be rescued?",
            "What can I do with half a bag of {veg} that's about to go soft?",
            "Is a cast iron pan worth it or is that just internet hype?",
            "My {dish} always turns out watery, what am I doing wrong?",
            "How long does cooked rice really keep in the fridge?",
            "I have {count} people coming for dinner and one of them doesn't eat gluten. Help.",
        ],
        replies=[
            "A quick stir-fry works well: {veg}, garlic, soy sauce and whatever protein you have, "
            "done in about fifteen minutes. Cook the {veg} hot and fast so it stays crisp.",
            "Add a splash of acid, like lemon juice or vinegar, and something bland such as "
            "plain rice or potato to soak up the salt. Taste as you go rather than at the end.",
            "Roast it at a high heat with olive oil and salt, then blend it into a soup or fold "
            "it into an omelette. Soft {veg} is perfect for that.",
            "It is worth it if you will season it and not mind the weight. It lasts forever, "
            "goes in the oven, and gives a far better sear than non-stick.",
            "Watery usually means too much liquid at the start or a lid kept on too long. Let "
            "it simmer uncovered for the last ten minutes and it will thicken.",
            "Cooked rice is best eaten within a day; cool it quickly and keep it cold. When in "
            "doubt, throw it out, it's not worth the stomach ache.",
            "A {dish} made with rice or potatoes instead of flour keeps everyone happy. Check "
            "the stock cube label, that is where gluten hides.",
        ],
    ),
    Topic(
        "commute",
        users=[
            "The train was packed again, I stood the whole way with my face in someone's backpack.",
            "Thinking about cycling to work instead of taking the bus. Is twelve kilometres too "
            "far?",
            "Why do buses always come in threes after a {minutes} minute wait?",
            "I missed my connection by one minute and had to wait {minutes} more.",
            "Do noise cancelling headphones actually help on a loud commute?",
            "Someone was eating a whole rotisserie chicken on the tram this morning.",
        ],
        replies=[
            "That sounds miserable. If your hours allow it, leaving even fifteen minutes "
            "earlier often means a seat.",
            "Twelve kilometres is very doable once you're used to it, around forty minutes at "
            "an easy pace. Try it once on a calm, dry day first.",
            "It's called bus bunching: a delayed bus picks up more passengers, slows down "
            "further, and the ones behind it catch up.",
            "That is the worst, so close and still gone. A journey planner app with live "
            "times can warn you early enough to run for it, or to stop rushing.",
            "Good ones help a lot, especially with low engine rumble. Try a pair in a shop "
            "before you buy, comfort matters more than the spec sheet.",
            "Public transport really is a window into humanity. Did anyone say anything?",
        ],
    ),
    Topic(
        "television",
        users=[
            "Just finished {show} and I don't know what to do with my evenings now.",
            "Is {show} worth sticking with? The first two episodes were slow.",
            "Can you recommend something like {show} but less bleak?",
            "I fell asleep during the finale of {show}, so I have to watch it again.",
            "My flatmate keeps spoiling {show} for me, it's driving me up the wall.",
        ],
        replies=[
            "Finishing a good series leaves a gap. A short miniseries might help, so you are "
            "not committing to six seasons straight away.",
            "Many people say it gets going around episode four. Give it two more; if it still "
            "drags, there is no shame in moving on.",
            "If you liked the writing, look for something by the same creators. The tone is "
            "often similar but a bit lighter.",
            "At least a second watch lets you catch the details you missed the first time. "
            "Finales are usually better on a rewatch anyway.",
            "Ask them for a spoiler-free zone in the living room, or watch with headphones "
            "until you catch up.",
        ],
    ),
    Topic(
        "work",
        users=[
            "The quarterly review ran two hours over and nothing was decided.",
            "My inbox has four hundred unread messages and I'm scared to open it.",
            "How do I politely say no to another project when I'm already overloaded?",
            "We're switching to a new ticketing system and everyone is confused.",
            "I have to present to the leadership team and my slides look boring.",
            "{colleague} keeps scheduling meetings over my lunch break.",
            "Should I learn {subject} properly? It keeps coming up at work.",
        ],
        replies=[
            "Meetings like that usually lack a decision owner. Next time, ask at the start who "
            "decides and what would count as done.",
            "Sort by sender and archive everything automated first. What is left is usually a "
            "few dozen messages that actually need you.",
            "Be concrete: list what you are already carrying and ask which of those should "
            "move to make room. It turns a no into a trade-off.",
            "Change is always bumpy. A one-page cheat sheet with the five most common actions "
            "helps people more than a long training session.",
            "Lead with the one thing you want them to remember and cut every slide that does "
            "not support it. Fewer words, bigger pictures.",
            "Block your lunch in the shared calendar and mark it busy. Most people just look "
            "for a free slot without thinking.",
            "If it keeps coming up, a small course pays for itself quickly. {subject} is easier "
            "to learn with a real task from your own job.",
        ],
    ),
    Topic(
        "fitness",
        users=[
            "Went for a run this morning and my shins hurt the whole time.",
            "How many rest days should I take when I start a running plan?",
            "I keep skipping the gym because I'm exhausted after work.",
            "Is stretching better before or after exercise?",
            "Did {count} sets of squats and now I can't walk down stairs.",
        ],
        replies=[
            "Shin pain is common when the mileage goes up too fast. Shorter runs on softer "
            "ground and decent shoes usually sort it out.",
            "Two or three rest days a week is plenty at the start. Your tendons adapt slower "
            "than your lungs do.",
            "Try going before work, or pack your bag the night before so the decision is "
            "already made when you are tired.",
            "Gentle movement to warm up before, longer stretches after. Static stretching on "
            "cold muscles does very little.",
            "That is the classic leg-day walk. Light movement helps more than lying still, and "
            "it fades in two or three days.",
        ],
    ),
    Topic(
        "home",
        users=[
            "The washing machine makes a grinding noise on the spin cycle.",
            "How do I stop condensation on the bedroom windows?",
            "Our radiator upstairs is cold at the top and warm at the bottom.",
            "I finally cleaned out the junk drawer and found {count} dead batteries.",
            "What's the least painful way to descale a kettle?",
        ],
        replies=[
            "Grinding on spin is often a coin or a bra wire stuck in the drum. Check the "
            "filter at the front bottom first, it is a five minute job.",
            "Open the window for ten minutes in the morning and keep furniture a little away "
            "from the outside walls so air can move.",
            "Cold at the top means trapped air. Bleed it with a radiator key while the heating "
            "is on, with a cloth ready for drips.",
            "Most supermarkets take old batteries back. Tape the ends of lithium ones before "
            "you drop them off.",
            "Boil it half full with equal parts water and white vinegar, leave it an hour, "
            "then rinse and boil clean water twice.",
        ],
    ),
    Topic(
        "tech",
        users=[
            "My {gadget} fan sounds like a jet engine whenever I open more than {count} tabs.",
            "Should I update my {gadget} now or wait until the bugs are fixed?",
            "The printer says it's offline even though it sits right next to the router.",
            "How do I back up my photos without paying for another subscription?",
            "My {gadget} battery drops from forty percent to zero in minutes.",
        ],
        replies=[
            "Check which tabs are heavy in the task manager; one video or web app often does "
            "most of the damage. A cleaner extension can suspend idle tabs.",
            "Waiting a week or two for the first patch is reasonable, unless the update fixes "
            "a security hole, then install it now.",
            "Printers lose their address when the router restarts. Give it a fixed address in "
            "the router settings and it usually stops doing that.",
            "An external drive plus one free cloud tier for the most precious albums is a good "
            "start. The rule of thumb is three copies, two places.",
            "That sounds like a worn battery misreporting its charge. A calibration cycle can "
            "help, but a replacement is probably due.",
        ],
    ),
    Topic(
        "sleep",
        users=[
            "Woke up at 4 a.m. again and couldn't fall back asleep.",
            "Does reading on a screen before bed really mess with sleep?",
            "Our neighbours play drums until midnight, what can I even do?",
            "Is a twenty minute nap in the afternoon a good idea or a trap?",
        ],
        replies=[
            "Early waking is often stress or light. Try blackout curtains and keep the phone "
            "out of reach so checking the time does not wake you further.",
            "The content matters more than the light: an exciting thread keeps the brain "
            "going. Dim the screen and pick something dull.",
            "Start with a friendly note, most people do not realise how far sound travels. If "
            "that fails, the building manager is the next step.",
            "Twenty minutes is the sweet spot. Much longer and you wake up groggy, and it can "
            "push your bedtime later.",
        ],
    ),
    Topic(
        "money",
        users=[
            "Trying to put together a monthly budget, but I always forget the annual bills.",
            "Is it smarter to pay off a small loan early or keep the savings?",
            "I spent way too much on takeaway this month, it's embarrassing.",
            "What's a sensible emergency fund for someone who rents?",
        ],
        replies=[
            "Add up the annual bills and divide by twelve, then move that amount into a "
            "separate pot every month. They stop being a surprise.",
            "Compare the loan's interest rate with what your savings earn. If the loan costs "
            "more, paying it down is a guaranteed return.",
            "Everyone has months like that. Planning two easy dinners in advance does more "
            "than willpower at seven in the evening.",
            "Three months of essential spending is a common target. Start with one month, it "
            "already covers most surprises.",
        ],
    ),
    Topic(
        "music",
        users=[
            "I can't stop listening to {artist} lately.",
            "Got tickets to see {artist}, the seats are terrible but who cares.",
            "Any tips for getting into jazz? It all sounds the same to me.",
            "Made a playlist for running but half the songs are too slow.",
        ],
        replies=[
            "Good choice. Their early albums are worth a listen too, the sound is rawer.",
            "Live shows are about the atmosphere anyway. Bring earplugs, your future self will "
            "thank you.",
            "Start with one classic album and listen to it a few times; Kind of Blue is the "
            "usual door in. Familiarity is what makes the differences audible.",
            "Look for songs around 160 to 180 beats per minute; most apps can filter by tempo now.",
        ],
    ),
    Topic(
        "weather",
        users=[
            "It has been raining nonstop and my shoes never dry.",
            "The heatwave is unbearable, our flat has no air conditioning.",
            "Is it normal to feel this low when it gets dark at 4 p.m.?",
            "There was hail the size of marbles on my walk home.",
        ],
        replies=[
            "Stuff them with newspaper and keep them away from the radiator so the leather "
            "does not crack. A second pair to rotate helps a lot.",
            "Close the curtains on the sunny side during the day and open windows on opposite "
            "sides at night for a cross draught.",
            "Very normal. Daylight in the morning, even a short walk, and a daylight lamp at "
            "your desk can make a real difference.",
            "That must have stung! Glad you made it home in one piece.",
        ],
    ),
    Topic(
        "learning",
        users=[
            "I'm trying to learn {subject} in the evenings but I get stuck so easily.",
            "What's the difference between a list and a tuple, in plain words?",
            "How do people stay motivated with online courses? I always quit halfway.",
            "Is it silly to start a degree at my age?",
        ],
        replies=[
            "Getting stuck is part of it. Write down exactly where it breaks, then look up "
            "that one thing; small questions are easier to answer.",
            "A list is a shopping list you can change; a tuple is a printed receipt, fixed "
            "once it is made.",
            "Pick a small project you actually want and learn only what it needs. A deadline "
            "with a friend helps too.",
            "Not at all. Mature students often do better because they know why they are there.",
        ],
    ),
    Topic(
        "family",
        users=[
            "Had a long call with my mum, she wants everyone home for the holidays.",
            "My nephew asked me to help with his maths homework and I'd forgotten everything.",
            "My dad finally learned to use video calls, he kept pointing the camera at the "
            "ceiling.",
            "Family group chat is {count} hundred messages deep about one birthday cake.",
        ],
        replies=[
            "Holidays with everyone can be lovely and exhausting. It helps to agree in advance "
            "how long you'll stay.",
            "You can learn it together; explaining a step out loud is the best way to "
            "understand it anyway.",
            "That is a milestone! The ceiling tour is a rite of passage.",
            "Mute it and catch up once a day, the cake will get decided without you.",
        ],
    ),
]


# Sentences an assistant adds to any reply on the topic, so replies run as long as real ones.
MORE = {
    "cooking": [
        "A little extra salt at the end and a squeeze of lemon fix more dishes than people think.",
        "If you cook a double batch, the second half freezes well and saves a tired evening.",
        "Keep a few basics in the cupboard, like tinned tomatoes, lentils and stock, and most "
        "recipes are within reach.",
        "Taste at every step; it is much easier to adjust early than to rescue at the end.",
    ],
    "commute": [
        "A podcast or an audiobook can turn dead time into something you look forward to.",
        "Many cities publish live crowding data, and the carriages at the ends are usually "
        "emptier.",
        "If the route allows it, getting off one stop early and walking can be faster at "
        "rush hour.",
    ],
    "television": [
        "Reviews from people with similar taste are more useful than overall ratings.",
        "Watching one episode a night instead of bingeing tends to make a good series last.",
        "Subtitles on can help a lot with fast dialogue or heavy accents.",
    ],
    "work": [
        "Writing the decision and the next step in one line at the end of a meeting saves a "
        "lot of follow-up messages.",
        "A short daily list of the three things that must happen keeps the noise from taking over.",
        "It also helps to agree with your manager on what can wait, so you are not guessing.",
        "Protecting one focused block in the morning often does more than working late.",
    ],
    "fitness": [
        "Consistency beats intensity: three easy sessions a week add up faster than one "
        "heroic one.",
        "Sleep and enough protein matter as much as the training itself.",
        "If a pain is sharp or gets worse during exercise, stop and get it looked at.",
    ],
    "home": [
        "A quick look at the manual or the manufacturer's site usually has a troubleshooting "
        "page for exactly this.",
        "Doing small jobs as soon as you notice them keeps them from turning into big ones.",
        "If you rent, it is worth telling the landlord in writing so there is a record.",
    ],
    "tech": [
        "Restarting the device and the router first solves a surprising share of problems.",
        "Keep automatic updates on for security fixes, even if you delay the big ones.",
        "Writing down what you changed makes it much easier to undo if something breaks.",
    ],
    "sleep": [
        "Going to bed and getting up at the same time every day helps more than any gadget.",
        "A cool, dark room and no caffeine after lunch are the usual first steps.",
        "If it goes on for weeks, a doctor can check whether something else is behind it.",
    ],
    "money": [
        "Automating the transfer on payday means you never have to decide again.",
        "Looking at the last three months of statements shows where the money really goes.",
        "Small recurring subscriptions add up; a yearly review of them pays off.",
    ],
    "music": [
        "Live recordings often show a side of a band that the studio albums hide.",
        "Letting a streaming service build a radio from one song is a good way to discover more.",
        "Good headphones make older recordings sound far better than laptop speakers.",
    ],
    "weather": [
        "Checking the hourly forecast in the morning saves a lot of soaked walks.",
        "A light waterproof layer in the bag covers most surprises.",
        "Drinking enough water matters in the heat more than people expect.",
    ],
    "learning": [
        "Short daily practice beats long sessions once a month; twenty minutes is plenty.",
        "Explaining what you learned to someone else shows quickly what is still unclear.",
        "It is normal to feel slow in the middle; that is usually when it starts to click.",
    ],
    "family": [
        "A short message in between big calls keeps everyone feeling in touch.",
        "Shared photo albums are an easy way to include relatives who live far away.",
        "It is fine to set limits; people usually respect them when they are said kindly.",
    ],
}

TOPICS = [replace(t, more=MORE[t.name]) for t in TOPICS]

ACKS = [
    "Thanks for telling me, I'll remember that.",
    "Oh, that's good to know!",
    "Noted. How do you feel about it?",
    "That sounds like a lot. How are you doing with it all?",
    "Nice! Tell me more whenever you like.",
    "Got it, I'll keep that in mind.",
    "Interesting, I did not expect that.",
]

# Everyday follow-ups an assistant adds, so replies do not all end the same way.
FOLLOW_UPS = [
    "",
    "",
    " How did it go?",
    " Want me to suggest a few options?",
    " What have you tried so far?",
    " Let me know how it turns out.",
]

ASIDES = [
    "That depends on a few things. What matters most to you here?",
    "Good question. I'd start small and see how it goes.",
    "Ugh, that's annoying. Is it getting in the way a lot?",
    "Ha, that sounds about right. Anything I can help with?",
    "It varies a lot; asking around locally is usually the quickest way to find out.",
]

CHATTER = [
    "{person} keeps talking about {thing}.",
    "Also, {person} recommended {thing} to me.",
    "By the way, {person} finally tried {thing}.",
    "{person} sent me a video about {thing}.",
    "Random, but {person} is suddenly obsessed with {thing}.",
    "I keep meaning to look into {thing}.",
    "I'm {feeling} about {thing}, to be honest.",
    "Side note: {thing} seems to be everywhere at the moment.",
    "{person} asked what I think of {thing}, no idea what to say.",
    "Unrelated: I'm {feeling} about trying {thing}.",
]

PARAPHRASES = [
    ParaphraseFact(
        "instrument",
        "I've started taking {v} lessons twice a week, my fingers are so sore.",
        "Which instrument am I learning to play?",
        ["cello", "oboe", "clarinet", "banjo", "harp", "ukulele"],
    ),
    ParaphraseFact(
        "child",
        "Our little girl arrived at 3 a.m. and we named her {v}.",
        "What is my daughter called?",
        ["Eloise", "Marisol", "Annika", "Saoirse", "Imogen", "Beatrix"],
    ),
    ParaphraseFact(
        "drink",
        "My go-to at the café near the office is a {v} with oat milk.",
        "What do I usually order when I grab a coffee?",
        ["cortado", "macchiato", "americano", "affogato"],
    ),
    ParaphraseFact(
        "car",
        "The mechanic says my {v} needs new brake pads before winter.",
        "What vehicle do I drive?",
        ["Corolla", "Outback", "Prius", "Jetta", "Yaris", "Mazda"],
    ),
    ParaphraseFact(
        "pet",
        "I finally adopted a rescue greyhound and called him {v}.",
        "What's my dog's name?",
        ["Biscuit", "Pretzel", "Waffles", "Juniper", "Toffee", "Pickwick"],
    ),
    ParaphraseFact(
        "sibling",
        "My sister lives in {v} these days, she teaches at the university there.",
        "Where is my sibling based?",
        ["Lisbon", "Tallinn", "Krakow", "Valparaiso", "Bergen", "Ljubljana"],
    ),
    ParaphraseFact(
        "allergy",
        "I'm allergic to {v}, even a trace gives me hives.",
        "Which food must I avoid eating?",
        ["sesame", "shellfish", "kiwi", "lupin", "buckwheat"],
    ),
    ParaphraseFact(
        "job",
        "I got hired as a {v} at the regional hospital, night shifts for now.",
        "What do I do for a living?",
        ["radiographer", "phlebotomist", "pharmacist", "physiotherapist", "paramedic"],
    ),
    ParaphraseFact(
        "partner",
        "My partner {v} and I have been together nine years now.",
        "Who is my spouse?",
        ["Mateo", "Ingrid", "Tomasz", "Aiyana", "Rafaela", "Desmond"],
    ),
    ParaphraseFact(
        "novel",
        "My favourite novel of all time is {v}, I reread it every winter.",
        "Which book do I love most?",
        ["Middlemarch", "Rebecca", "Beloved", "Persuasion", "Kindred"],
    ),
    ParaphraseFact(
        "hometown",
        "I grew up in a tiny fishing village called {v}.",
        "What's my hometown?",
        ["Porthleven", "Staithes", "Polperro", "Ullapool", "Mousehole"],
    ),
]

LISTS = [
    ListFact(
        "countries",
        "Which countries have I been to?",
        [
            "Still dreaming about the street food in {v}.",
            "When I backpacked through {v} I lost my passport on day two.",
            "The best sunset I ever saw was in {v}.",
            "My photos from {v} finally got printed, they look great framed.",
            "I spent two weeks in {v} after university and never wanted to leave.",
        ],
        ["Portugal", "Vietnam", "Chile", "Morocco", "Iceland", "Peru", "Slovenia", "Laos"],
    ),
    ListFact(
        "sports",
        "What sports do I play?",
        [
            "Pulled a muscle at {v} practice tonight.",
            "Our {v} team lost again but it was fun.",
            "I've been playing {v} with coworkers after work.",
            "Bought new shoes for {v}, my old ones had holes.",
            "The {v} league starts up again soon, I can't wait.",
        ],
        ["badminton", "squash", "volleyball", "rugby", "lacrosse", "handball", "curling"],
    ),
    ListFact(
        "languages",
        "Which languages am I studying?",
        [
            "My {v} tutor says my pronunciation is getting better.",
            "Did thirty minutes of {v} vocabulary on the train.",
            "I watched a film in {v} without subtitles and understood half!",
            "The {v} grammar book I ordered is enormous.",
            "Joined a {v} conversation group at the library.",
        ],
        ["Portuguese", "Korean", "Swahili", "Dutch", "Hungarian", "Turkish", "Tagalog"],
    ),
    ListFact(
        "plants",
        "What plants are growing on my balcony?",
        [
            "The {v} on the balcony finally flowered.",
            "Repotted the {v} into a bigger pot, its roots were everywhere.",
            "Something has been nibbling my {v} leaves.",
            "My {v} survived the frost, barely.",
            "I moved the {v} into the shade and it perked right up.",
        ],
        ["lavender", "jasmine", "fuchsia", "marigolds", "geraniums", "oleander", "begonias"],
    ),
    ListFact(
        "games",
        "Which board games do I own?",
        [
            "We played {v} until 2 a.m. and I lost badly.",
            "Found a secondhand copy of {v} at the market.",
            "My friends refuse to play {v} with me anymore, I'm too competitive.",
            "The {v} box is missing half its pieces.",
            "Taught my parents {v} and now they're obsessed.",
        ],
        ["Catan", "Azul", "Carcassonne", "Wingspan", "Dominion", "Splendor", "Codenames"],
    ),
]

WHENS = [
    WhenFact(
        "passport",
        "I renewed my passport {when}, the photo is dreadful.",
        "When did I renew my passport?",
    ),
    WhenFact("flu", "Got my flu shot {when}, my arm still aches.", "When did I get my flu shot?"),
    WhenFact(
        "lease",
        "We signed the lease on the new studio {when}!",
        "When did we sign the studio lease?",
    ),
    WhenFact(
        "wedding",
        "My brother's wedding was {when} and I'm still tired.",
        "When was my brother's wedding?",
    ),
    WhenFact(
        "race",
        "I ran my first half marathon {when}, legs still complaining.",
        "When did I run my first half marathon?",
    ),
    WhenFact(
        "tooth",
        "The dentist pulled my wisdom tooth {when}, soup only for me.",
        "When was my wisdom tooth pulled?",
    ),
    WhenFact(
        "bike",
        "I sold my old bike {when} to a student down the road.",
        "When did I sell my old bike?",
    ),
    WhenFact(
        "kitchen",
        "Our kitchen renovation finally finished {when}.",
        "When did the kitchen renovation finish?",
    ),
]

UPDATES = [
    UpdatedFact(
        "city",
        "I live in {old} with two roommates, the rent is brutal.",
        [
            "I moved from {old} to {new}, still unpacking boxes.",
            "Moving day is done, the new flat in {new} is full of boxes.",
        ],
        "Which city do I live in now?",
        ["Leeds", "Bristol", "Glasgow", "Cardiff", "Utrecht", "Ghent", "Aarhus", "Galway"],
    ),
    UpdatedFact(
        "employer",
        "I work at {old} as a data analyst.",
        [
            "Left {old}, first week at {new} went well.",
            "First week at {new} went well, the new team is friendly.",
        ],
        "Where do I work now?",
        ["Fernwood", "Brightline", "Ostara", "Halcyon", "Quillon", "Marlow"],
    ),
    UpdatedFact(
        "dentist",
        "My dentist is Dr. {old}, she's very thorough.",
        [
            "Switched from Dr. {old} to Dr. {new}, much gentler.",
            "Dr. {new} did my cleaning, so much gentler than before.",
        ],
        "Who is my dentist now?",
        ["Abernathy", "Okonkwo", "Lindqvist", "Castellanos", "Petrakis", "Whitfield"],
    ),
    UpdatedFact(
        "manager",
        "My manager {old} is great, very hands-off.",
        [
            "{old} left the company, so {new} is my manager from now on.",
            "Had my first one-on-one with {new}, my new boss, it went fine.",
        ],
        "Who is my manager now?",
        ["Reginald", "Svetlana", "Bartholomew", "Yolanda", "Lorcan", "Perpetua"],
    ),
    UpdatedFact(
        "phone",
        "My phone is an ancient {old} with a cracked screen.",
        [
            "Finally replaced the {old} with a {new}.",
            "Setting up the new {new}, transferring everything takes forever.",
        ],
        "Which phone do I have now?",
        ["Nokia", "Pixel", "Fairphone", "Motorola", "Xperia", "OnePlus"],
    ),
]

DISTRACTORS = [
    DistractorFact(
        "vet",
        "{a} had her checkup with Dr. {v}, all healthy.",
        "Which vet does my cat {a} see?",
        [
            "{a} is sulking because the vet visit is coming up.",
            "My cat {a} hates the carrier, any tips for vet visits?",
            "The vet near work closed, so {a}'s records have to move.",
            "Does a cat like {a} need to see the vet every year?",
            "My neighbour's cat sees a vet across town, they rave about it.",
            "{a} the cat sat on my keyboard again.",
            "Which vet would you pick for an anxious cat like {a}?",
            "{a} threw up a hairball, do I need to see a vet?",
            "The vet bill for my cat last time was outrageous.",
            "My cat {a} needs her jabs soon, the vet sent a reminder.",
            "Do vets see cats on the same day, or should I book ahead for {a}?",
        ],
        ["Haldane", "Ferreira", "Nakamura", "Oyelaran", "Vasquez"],
        anchors=["Mochi", "Tigger", "Noodle", "Pumpkin", "Smudge"],
    ),
    DistractorFact(
        "plumber",
        "The guy who sorted out the leak under the sink was called {v}, total lifesaver.",
        "What was the name of the plumber who fixed my kitchen leak?",
        [
            "The kitchen leak is back, I need a plumber.",
            "Another plumber quoted me a fortune for the kitchen.",
            "Is a kitchen leak an emergency or can it wait?",
            "The plumber cancelled again, my kitchen is a mess.",
            "How do I find a plumber who actually fixed things properly?",
            "My kitchen smells damp since the leak.",
            "What do plumbers charge just to come out and look at a leak?",
            "The landlord's plumber never fixed the kitchen tap properly.",
            "Is it the plumber's job or the landlord's to pay for a kitchen leak?",
            "My neighbour's plumber fixed their leak in ten minutes, so unfair.",
        ],
        ["Ambrose", "Thaddeus", "Casimir", "Evander", "Leopold"],
    ),
    DistractorFact(
        "bookclub",
        "Book club picked {v} as our next read, it's huge.",
        "Which book did my book club pick for our next read?",
        [
            "Book club met tonight, we argued about the last book for an hour.",
            "I haven't finished the book for book club yet.",
            "Can you suggest a book for book club that isn't too long?",
            "Our book club wants to pick a book by a local author.",
            "Someone at book club read the wrong book, it was hilarious.",
            "Does a book club need rules about picking the next book?",
            "My book club can never agree on which book to read.",
            "Half the book club didn't read the book, again.",
            "Should a book club pick classics or new releases?",
            "I'm hosting book club and need snacks that go with a book about sailors.",
        ],
        ["Stoner", "Rebecca", "Lolita", "Gilead", "Piranesi", "Possession"],
    ),
    DistractorFact(
        "locker",
        "The code for my gym locker is {v}, writing it here so I stop forgetting.",
        "What's the code for my gym locker?",
        [
            "Forgot my gym bag again, the locker room was packed.",
            "The gym changed the locker system, so annoying.",
            "Someone left their locker open at the gym with a laptop inside.",
            "Do gym lockers ever get broken into?",
            "Lost the key for my old gym locker, the code ones are better.",
            "My gym wants a deposit for a locker now.",
            "The locker codes at the gym reset every month, apparently.",
            "I saw someone trying every locker code at the gym, creepy.",
            "Are gym lockers safe enough for a phone?",
            "The gym locker next to mine always smells of old socks.",
        ],
        ["4719", "8362", "2958", "6041", "7385"],
    ),
    DistractorFact(
        "venue",
        "We booked {v} Hall for the wedding, deposit paid!",
        "Which venue did we book for the wedding?",
        [
            "Spent the whole day touring wedding venues, my feet hurt.",
            "The venue for my cousin's wedding had terrible acoustics.",
            "How far ahead should we book a wedding venue?",
            "Every wedding venue wants a deposit up front, is that normal?",
            "Found a venue that allows dogs at the wedding!",
            "Wedding planning is mostly spreadsheets about venues.",
            "A venue we liked for the wedding is booked two years out.",
            "Which is better for a wedding, a barn venue or a hotel?",
            "My friend's wedding venue lost power halfway through the speeches.",
            "We argued about the wedding venue for the whole drive home.",
        ],
        ["Ashcombe", "Ravensworth", "Thornbury", "Kilverstone", "Wrexford"],
    ),
]

RELATIVE_DAYS = {
    "yesterday": 1,
    "two days ago": 2,
    "three days ago": 3,
    "last week": 7,  # a week: the Monday of the week before (see long_conversations.meant_day)
    "a week ago": 7,
}

# Relative dates an annotating renderer might resolve: none may appear in filler.
FORBIDDEN_IN_FILLER = (
    r"\b(yesterday|tomorrow|ago|last (week|month|year|night)|next (week|month|year)|weekend|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|the other day)\b"
)

REACTIONS = [
    "As for {thing}, try it small first and see if it sticks.",
    "Funny that {person} brought up {thing}.",
    "If {person} is into {thing}, ask how they got started.",
    "{thing} sounds like a good rabbit hole for a quiet evening.",
    "Feeling {feeling} about {thing} is fair, there is a lot of hype around it.",
    "I have heard mixed things about {thing}, to be honest.",
    "{thing} does seem to come up everywhere at the moment.",
    "Maybe {person} would lend you a hand with {thing}.",
    "On {thing}: a cheap first step beats a big plan.",
    "Good on {person} for getting into {thing}.",
]

ENGLISH = Language(
    code="en",
    persona_id="assistant",
    slots=SLOTS,
    topics=TOPICS,
    acks=ACKS,
    follow_ups=FOLLOW_UPS,
    asides=ASIDES,
    chatter=CHATTER,
    reactions=REACTIONS,
    paraphrases=PARAPHRASES,
    lists=LISTS,
    whens=WHENS,
    updates=UPDATES,
    distractors=DISTRACTORS,
    relative_days=RELATIVE_DAYS,
    week_words=("last week",),
    forbidden_in_filler=FORBIDDEN_IN_FILLER,
)
