// A labelled text input for a number, kept as typed (the form checks it before sending).

export function NumberField(props: {
  label: string;
  testId: string;
  value: string;
  decimal?: boolean;
  onChange(value: string): void;
}) {
  return (
    <label>
      {props.label}{" "}
      <input
        data-testid={props.testId}
        inputMode={props.decimal ? "decimal" : "numeric"}
        value={props.value}
        onInput={(e) => props.onChange((e.target as HTMLInputElement).value)}
      />
    </label>
  );
}
