#include "graph/graph.h"
// Types only for now; builders and normalisations live in their own files.
