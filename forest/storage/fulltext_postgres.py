# SCRATCH (not committed): unblocks local runs until the real module lands.
def index_nodes(raw, model_id, rows):
    with raw.cursor() as cur:
        cur.executemany("INSERT INTO node_text (node_id, model_id, body, length) VALUES (%s, %s, array_to_tsvector(%s::text[]), %s)",
                        [(i, model_id, sorted(set(t.split())) or [''], len(t.split())) for i, t in rows])

def top_hits(raw, model_id, phrases, limit, archive_ids=None):
    return []

def index_memory(raw, memory_id, user_id, body, context):
    raw.execute("INSERT INTO personal_memory_text (memory_id, user_id, body, context, length) VALUES (%s, %s, array_to_tsvector(%s::text[]), array_to_tsvector(%s::text[]), %s)",
                (memory_id, user_id, sorted(set(body.split())), sorted(set(context.split())), len(body.split()) + len(context.split())))

def memory_hits(raw, user_id, phrases, limit, where_sql, params, weights):
    return []
