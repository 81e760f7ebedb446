#![deny(warnings)]

use retry_runtime::{Class, Classify};

fn by_code(error: &ApiError) -> Class {
    match error.code {
        429 => Class::RateLimited { retry_after: None },
        502..=504 => Class::Unavailable { retry_after: None },
        _ => Class::Definitive,
    }
}

// `with` on the whole type.
#[derive(Debug, thiserror::Error, Classify)]
#[error("api error {code}")]
#[classify(with = by_code)]
struct ApiError {
    code: u16,
}

mod classes {
    use retry_runtime::Class;

    pub fn by_exit(error: &super::JobError) -> Class {
        match error {
            super::JobError::Exited(75) => Class::Unavailable { retry_after: None },
            _ => Class::Definitive,
        }
    }
}

#[derive(Debug, thiserror::Error, Classify)]
#[classify(with = classes::by_exit)]
enum JobError {
    #[error("exited with {0}")]
    Exited(i32),
    #[error("killed")]
    Killed,
}

// `with` on one variant: the function is given the whole value.
#[derive(Debug, thiserror::Error, Classify)]
enum StoreError {
    #[error("conflict")]
    #[classify(definitive)]
    Conflict,
    #[error("job: {0}")]
    #[classify(with = StoreError::job_class)]
    Job(JobError),
}

impl StoreError {
    fn job_class(&self) -> Class {
        match self {
            StoreError::Job(JobError::Exited(75)) => Class::Unavailable { retry_after: None },
            _ => Class::Definitive,
        }
    }
}

fn main() {
    assert_eq!(ApiError { code: 503 }.classify(), Class::Unavailable { retry_after: None });
    assert_eq!(ApiError { code: 400 }.classify(), Class::Definitive);
    assert_eq!(JobError::Exited(75).classify(), Class::Unavailable { retry_after: None });
    assert_eq!(JobError::Killed.classify(), Class::Definitive);
    assert_eq!(StoreError::Conflict.classify(), Class::Definitive);
    assert_eq!(
        StoreError::Job(JobError::Exited(75)).classify(),
        Class::Unavailable { retry_after: None }
    );
    assert_eq!(StoreError::Job(JobError::Killed).classify(), Class::Definitive);
}
