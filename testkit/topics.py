"""Three short topics whose paragraphs tests and benches ingest: far apart enough that a tree built
from them keeps them apart, and small enough to embed in a moment."""
from __future__ import annotations

TOPICS = {
    "photosynthesis": [
        "Photosynthesis converts light energy into chemical energy in plants. Chlorophyll in the "
        "chloroplasts absorbs red and blue light and passes the energy to the reaction centres.",
        "The light reactions split water and release oxygen. They produce ATP and NADPH, which carry "
        "energy to the Calvin cycle in the stroma of the chloroplast.",
        "In the Calvin cycle the enzyme RuBisCO fixes carbon dioxide into sugars. Plants in hot climates "
        "use C4 or CAM photosynthesis to limit water loss while fixing carbon.",
    ],
    "volcanoes": [
        "Volcanoes form where magma from the mantle reaches the surface. Most lie along the boundaries "
        "of tectonic plates, such as the Pacific Ring of Fire.",
        "Explosive eruptions happen when viscous, gas-rich magma traps pressure until it fragments. "
        "Pyroclastic flows of hot ash and gas can travel faster than a car downhill.",
        "Basaltic shield volcanoes like Mauna Loa erupt runny lava quietly. Geologists watch ground "
        "swelling, earthquakes and sulfur dioxide emissions to forecast eruptions.",
    ],
    "jazz": [
        "Jazz began in New Orleans in the early twentieth century, mixing blues, ragtime and brass band "
        "music. Improvisation over chord changes is central to the style.",
        "Bebop musicians such as Charlie Parker and Dizzy Gillespie played fast tempos with complex "
        "harmonies in small clubs in New York during the 1940s.",
        "Miles Davis recorded Kind of Blue in 1959, built on modal scales instead of rapid chord changes; "
        "it became the best-selling jazz album of all time.",
    ],
}


def topic_text(*names: str) -> str:
    return "\n\n".join(p for name in names for p in TOPICS[name])
