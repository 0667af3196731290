/* Placeholder: replaced by the C API study test. */
int main(void) { return 0; }
