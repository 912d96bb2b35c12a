// metadata_bench: what metadata calls cost, in two modes.
//   scaling   metadata rates as client processes are added (metadata_scaling.cc)
//   auth      the same rates on two clusters alike but for authentication or TLS
//             (metadata_auth.cc)
// `metadata_bench help` lists them; each mode's flags are described at the top of its file.
#include "bench_modes.h"

int ScalingMain(int argc, char **argv);
int AuthMain(int argc, char **argv);

int main(int argc, char **argv) {
    return bench_modes::Dispatch(
        "metadata_bench",
        {{"scaling", ScalingMain, "metadata rates with 1..N concurrent client processes"},
         {"auth", AuthMain, "metadata rates with authentication none/munge or plain/TLS"}},
        argc, argv);
}
